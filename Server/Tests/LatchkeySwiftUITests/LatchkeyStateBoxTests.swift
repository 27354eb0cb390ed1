import Latchkey
import Testing

@testable import LatchkeySwiftUI

/// What `.latchkeyProvider` keeps in `@State`: SwiftUI makes the modifier again on every rebuild of the parent view and
/// keeps the first value, so making a box must make no state (and no client), and the kept box makes one, once.
@MainActor
@Suite("SwiftUI: the provider's state is made once")
struct LatchkeyStateBoxTests {
    @Test("boxes made on rebuilds make nothing; the kept box makes its state at the first read and returns it after")
    func madeOnceOnFirstRead() {
        var made = 0
        let make: @MainActor () -> LatchkeyState = {
            made += 1
            return LatchkeyState(client: LatchkeyClient(), i18n: LatchkeyI18n(locale: "en", store: InMemoryLocaleStore()))
        }
        let kept = LatchkeyStateBox(make)
        for _ in 0..<10 { _ = LatchkeyStateBox(make) }  // the parent's body ran ten more times
        #expect(made == 0)
        let first = kept.state
        #expect(made == 1)
        #expect(kept.state === first && made == 1)
    }
}
