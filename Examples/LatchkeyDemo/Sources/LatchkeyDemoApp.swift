import SwiftUI
import LatchkeySwiftUI

@main
@MainActor
struct LatchkeyDemoApp: App {
    /// Made once for the app's life. Its sessions live in the Keychain access group the app shares with its widget
    /// (`LatchkeyDemoWidget`), so both read one session, and a refresh by either is adopted by the other instead of
    /// presenting a spent refresh token (the SDK leases the refresh across processes).
    @State private var latchkey = LatchkeyState(
        config: DemoConfiguration.latchkey, client: LatchkeyClient(keychainAccessGroup: DemoConfiguration.keychainAccessGroup))

    var body: some Scene {
        WindowGroup {
            // The provider initializes the client, restores the session kept in the Keychain and puts `LatchkeyState`
            // into the environment of everything below it.
            RootView()
                .latchkeyProvider(state: latchkey)
        }
    }
}
