import SwiftUI
import LatchkeySwiftUI

/// Chooses the screen from the authentication state alone. Nothing navigates to "signed in" by hand: a sign-in or
/// sign-out done anywhere (a form, the browser, the passkey sheet, a refresh the server refused) changes
/// `LatchkeyState`, and this view follows.
@MainActor
struct RootView: View {
    @Environment(LatchkeyState.self) private var state

    var body: some View {
        ZStack {
            SignedIn { SignedInScreen() }
            // `SignedOut` waits for the stored session to be checked, so a returning user never sees the sign-in
            // screen flash at launch; the spinner covers that moment.
            SignedOut { SignedOutScreen() }
            if !state.isInitialized && !state.isSignedIn {
                ProgressView()
            }
        }
        .animation(.default, value: state.isSignedIn)
    }
}
