import SwiftUI
import LatchkeySwiftUI

@main
@MainActor
struct LatchkeyDemoApp: App {
    var body: some Scene {
        WindowGroup {
            // The provider creates the client once, initializes it, restores the session kept in the Keychain and
            // puts `LatchkeyState` into the environment of everything below it.
            RootView()
                .latchkeyProvider(config: DemoConfiguration.latchkey)
        }
    }
}
