#if canImport(SwiftUI)
import SwiftUI
import Latchkey

// The views of this folder hold no behaviour: each lays out a view model of this module (tested on Linux) and
// forwards taps to it. They are compiled only where SwiftUI exists.

/// `@EnvironmentObject var state: LatchkeyState` works as the vendor's documentation shows; SwiftUI also tracks the
/// state's properties through Observation, so `@Environment(LatchkeyState.self)` works too.
extension LatchkeyState: ObservableObject {}

/// Creates the app's `LatchkeyState`, puts it into the environment, starts it (initialize, restore the session,
/// follow changes) and lays the subtree out in the chosen language's direction.
@MainActor
public struct LatchkeyProvider: ViewModifier {
    @State private var state: LatchkeyState

    /// A provider that creates its state from `config` (once, however often the parent view is rebuilt).
    public init(config: LatchkeyConfig) {
        _state = State(initialValue: LatchkeyState(config: config))
    }

    /// A provider for a state the app made itself (a shared client, a session id, a language store).
    public init(state: LatchkeyState) {
        _state = State(initialValue: state)
    }

    public func body(content: Content) -> some View {
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
    /// Provides Latchkey to this view and its descendants (seed 003's `.thunderIDProvider(config:)`).
    public func latchkeyProvider(config: LatchkeyConfig) -> some View {
        modifier(LatchkeyProvider(config: config))
    }

    /// Provides an existing `LatchkeyState` to this view and its descendants.
    public func latchkeyProvider(state: LatchkeyState) -> some View {
        modifier(LatchkeyProvider(state: state))
    }

    /// The vendor's name for `latchkeyProvider(config:)`.
    public func thunderIDProvider(config: ThunderIDConfig) -> some View {
        latchkeyProvider(config: config)
    }
}
#endif
