/// What `.latchkeyProvider` keeps in its `@State`: the app's `LatchkeyState`, made the first time the provider's body
/// asks for it.
///
/// SwiftUI initializes a view modifier again each time its parent's body runs (an App-level `@Environment(\.scenePhase)`
/// is enough) and keeps only the first `@State` value, but `State(initialValue:)` evaluates its argument every time.
/// Made there directly, each rebuild would make a `LatchkeyState` and a `LatchkeyClient` with its URLSession, only to
/// drop them. A box costs nothing to make and drop; the one SwiftUI keeps makes the state once.
@MainActor
final class LatchkeyStateBox {
    private var made: LatchkeyState?
    private let make: @MainActor () -> LatchkeyState

    init(_ make: @escaping @MainActor () -> LatchkeyState) {
        self.make = make
    }

    /// The state, made at the first call.
    var state: LatchkeyState {
        if let made { return made }
        let state = make()
        made = state
        return state
    }
}
