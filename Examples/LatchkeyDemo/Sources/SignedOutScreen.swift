import SwiftUI
import UIKit
import LatchkeySwiftUI

/// Every way in that the SDK offers, on one screen: the app-native forms (`SignIn` / `SignUp`), the server's hosted
/// page in the system browser sheet (`SignInButton`) and a passkey from the system credential sheet.
@MainActor
struct SignedOutScreen: View {
    @Environment(LatchkeyState.self) private var state
    @State private var choice = Choice.signIn
    @State private var passkeyError: String?
    @State private var isUsingPasskey = false

    private enum Choice: Hashable { case signIn, signUp }

    var body: some View {
        NavigationStack {
            ScrollView {
                VStack(alignment: .leading, spacing: 24) {
                    // Why the user is here, when it is not their own doing ("Your session has ended…"), already in
                    // their language.
                    if let error = state.error {
                        Label(error, systemImage: "exclamationmark.triangle").foregroundStyle(.red)
                    }

                    Picker("Account", selection: $choice) {
                        Text("Sign in").tag(Choice.signIn)
                        Text("Create account").tag(Choice.signUp)
                    }
                    .pickerStyle(.segmented)

                    // The server's flow drawn natively, step by step (password, then a code if one is enrolled).
                    // Switching tabs starts a fresh flow. No `onComplete` is needed: `RootView` follows the state.
                    // After a password, iOS 18 is offered a passkey for the account without asking (conditional
                    // registration; nothing happens on earlier systems), so the next sign-in can be a passkey.
                    switch choice {
                    case .signIn: SignIn(passkeyUpgrade: true)
                    case .signUp: SignUp()
                    }

                    Divider()

                    Text("Or sign in on the server's own page:")
                        .font(.subheadline).foregroundStyle(.secondary)
                    // The hosted login page in an ASWebAuthenticationSession (PKCE, state, nonce); it returns through
                    // `DemoConfiguration.afterSignInURL`.
                    SignInButton()

                    Button {
                        Task { await signInWithPasskey() }
                    } label: {
                        Label("Sign in with a passkey", systemImage: "person.badge.key")
                    }
                    .buttonStyle(.bordered)
                    .disabled(isUsingPasskey || state.isLoading)
                    if let passkeyError {
                        Text(passkeyError).font(.footnote).foregroundStyle(.red)
                    }

                    // The demo server's published account; a real app obviously shows nothing like this.
                    Text("Demo account: demo@example.com / correct horse battery staple")
                        .font(.footnote).foregroundStyle(.secondary)
                        .textSelection(.enabled)
                }
                .padding()
            }
            .navigationTitle("Latchkey Demo")
        }
    }

    /// Seed 002's native login with only `.Passkey` offered: the system sheet lists this device's passkeys for the
    /// relying party (and those of a nearby phone, through a QR code, since the display is `.Always`).
    private func signInWithPasskey() async {
        passkeyError = nil
        isUsingPasskey = true
        defer { isUsingPasskey = false }
        do {
            _ = try await state.client.login(
                withRequest: NativeLoginRequest(anchor: UIApplication.shared.foregroundKeyWindow),
                usingModalAuthorizationFor: [.Passkey],
                display: .Always)
            // Nothing else to do: the client announces the new session, `LatchkeyState` follows, `RootView` switches.
        } catch let error as LatchkeyError where error.code == .canceled || error.code == .passkeyCanceled {
            // The user closed the sheet: their choice, not an error to show.
        } catch let error as LatchkeyError {
            // `.passkeyNoCredential` (no passkey here), `.passkeyFailed` (usually the associated domain: see README).
            passkeyError = state.i18n.message(for: error)
        } catch {
            passkeyError = error.localizedDescription
        }
    }
}
