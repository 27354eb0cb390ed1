import SwiftUI
import UIKit
import LatchkeySwiftUI

/// What a signed-in user sees: who they are, their editable profile, a passkey for next time, and the way out.
@MainActor
struct SignedInScreen: View {
    @Environment(LatchkeyState.self) private var state
    @State private var passkeyStatus: String?
    @State private var isAddingPasskey = false

    var body: some View {
        NavigationStack {
            List {
                Section("Signed in as") {
                    // `user` is nil for a moment when the server could not be reached at launch: the session is kept
                    // (`isSignedIn` stays true) and `state.error` says why.
                    Text(state.user?.displayName ?? state.user?.email ?? "…")
                        .font(.headline)
                    if let email = state.user?.email {
                        Text(email).foregroundStyle(.secondary)
                    }
                    if let error = state.error {
                        Text(error).foregroundStyle(.red)
                    }
                }
                Section {
                    NavigationLink("Edit profile") {
                        // The SCIM profile (`/scim2/Me`): loads on appear, saves with If-Match. A save reloads
                        // `state.user`, so the name above changes without extra code.
                        ScrollView {
                            UserProfile()
                                .padding()
                        }
                        .navigationTitle("Profile")
                    }
                }
                Section {
                    Button("Add a passkey to this account") {
                        Task { await addPasskey() }
                    }
                    .disabled(isAddingPasskey)
                    if let passkeyStatus {
                        Text(passkeyStatus).font(.footnote)
                    }
                } footer: {
                    Text("Then \"Sign in with a passkey\" works after signing out.")
                }
                Section {
                    // Revokes the refresh token, ends the server session and clears the Keychain; `RootView` then
                    // shows the signed-out screen.
                    SignOutButton()
                        .frame(maxWidth: .infinity)
                }
                Section {
                    // App Store Review Guideline 5.1.1(v): asks for confirmation, deletes the account on the server
                    // (`DELETE /users/me`) and signs out; a sign-in older than five minutes asks for a new one first.
                    DeleteAccountButton()
                }
            }
            .navigationTitle("Latchkey Demo")
        }
    }

    /// Creates a passkey on this device (iCloud Keychain) for the signed-in account: the system sheet asks for Face ID
    /// or Touch ID, and the server stores the public key. The name is what the passkey list in Settings shows.
    private func addPasskey() async {
        passkeyStatus = nil
        isAddingPasskey = true
        defer { isAddingPasskey = false }
        do {
            let token = try await state.client.authToken()  // the session's tokens, refreshed if due
            let request = NewPasskeyRequest(
                anchor: UIApplication.shared.foregroundKeyWindow,
                friendlyName: state.user?.email ?? "Latchkey Demo")
            try await state.client.registerNewPasskey(withRequest: request, authToken: token)
            passkeyStatus = "Passkey added."
        } catch let error as LatchkeyError where error.code == .passkeyCanceled {
            // The user closed the sheet.
        } catch let error as LatchkeyError {
            passkeyStatus = state.i18n.message(for: error)
        } catch {
            passkeyStatus = error.localizedDescription
        }
    }
}
