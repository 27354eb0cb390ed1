#if canImport(SwiftUI)
import SwiftUI
import Latchkey
import LatchkeyApple
import Logging

// The views of this folder hold no behaviour: each lays out a view model of this module (tested on Linux) and
// forwards taps to it. They are compiled only where SwiftUI exists.

/// `@EnvironmentObject var state: LatchkeyState` works as ThunderID's documentation shows; SwiftUI also tracks the
/// state's properties through Observation, so `@Environment(LatchkeyState.self)` works too.
extension LatchkeyState: ObservableObject {}

/// Creates the app's `LatchkeyState`, puts it into the environment, starts it (initialize, restore the session,
/// follow changes) and lays the subtree out in the chosen language's direction.
@MainActor
public struct LatchkeyProvider: ViewModifier {
    // A box, not the state: SwiftUI makes this modifier again whenever the parent view is rebuilt and keeps only the
    // first `@State` value, so the state is made by the kept box, once (LatchkeyStateBox says why).
    @State private var box: LatchkeyStateBox

    /// A provider whose state is made from `config` once, when the provider first appears; rebuilding the parent view
    /// makes no other state or client. `logger` receives the client's lines and the set-up mistakes
    /// (`LatchkeyState.diagnosis`); by default the unified log on Apple platforms.
    public init(config: LatchkeyConfig, sessionCheck: LatchkeyState.SessionCheck = .server, logger: Logger = .latchkey) {
        _box = State(
            initialValue: LatchkeyStateBox {
                LatchkeyState(
                    config: config, client: LatchkeyClient(http: URLSessionHTTPClient(), prefersEphemeralWebBrowserSession: false, logger: logger),
                    sessionCheck: sessionCheck, logger: logger)
            })
    }

    /// A provider for a state the app makes itself (a shared client, a session id, a language store, `.storedTokens`).
    /// The expression is evaluated once, when the provider first appears, not each time the parent view is rebuilt.
    public init(state: @autoclosure @escaping @MainActor () -> LatchkeyState) {
        _box = State(initialValue: LatchkeyStateBox(state))
    }

    public func body(content: Content) -> some View {
        let state = box.state
        // Read in `body`, where Observation tracks them (a change of language re-runs it); the transforms below run
        // later, outside that tracking, so they only use these copies.
        let chosen = state.i18n.locale
        let rightToLeft = state.i18n.isRightToLeft
        content
            .environment(state)
            .environmentObject(state)
            .transformEnvironment(\.layoutDirection) { direction in
                // An explicitly chosen language decides the direction; otherwise the system's stays.
                if chosen != nil { direction = rightToLeft ? .rightToLeft : .leftToRight }
            }
            .transformEnvironment(\.locale) { locale in
                if let chosen { locale = Locale(identifier: chosen) }
            }
            .task { await state.start() }
    }
}

// `@MainActor` said here and on every view of this module: before the iOS 18 / macOS 15 SDKs `View` and
// `ViewModifier` are not main-actor isolated, and the state these views create and read is.
@MainActor
extension View {
    /// Provides Latchkey to this view and its descendants (ThunderID's `.thunderIDProvider(config:)`): a state made
    /// once from `config`, started when the view appears. `sessionCheck` says how the stored session is checked at
    /// launch: with the server (the default), or by trusting the stored tokens until they must be refreshed.
    /// `logger` is where the SDK logs, set-up mistakes included (what to fix, once each); by default the unified log
    /// on Apple platforms (subsystem `io.latchkey`), which Xcode's console shows.
    public func latchkeyProvider(
        config: LatchkeyConfig, sessionCheck: LatchkeyState.SessionCheck = .server, logger: Logger = .latchkey
    ) -> some View {
        modifier(LatchkeyProvider(config: config, sessionCheck: sessionCheck, logger: logger))
    }

    /// Provides a `LatchkeyState` the app makes to this view and its descendants; the expression is evaluated once.
    public func latchkeyProvider(state: @autoclosure @escaping @MainActor () -> LatchkeyState) -> some View {
        modifier(LatchkeyProvider(state: state()))  // wrapped again, not called: the initializer takes an autoclosure
    }

    /// ThunderID's name for `latchkeyProvider(config:)`.
    public func thunderIDProvider(config: ThunderIDConfig) -> some View {
        latchkeyProvider(config: config)
    }
}
#endif
