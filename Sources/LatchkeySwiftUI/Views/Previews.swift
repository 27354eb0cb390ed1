#if canImport(SwiftUI)
import SwiftUI
import Latchkey

// Xcode's canvas for every component, over `LatchkeyState.preview(...)` (no server). They are plain `PreviewProvider`s
// rather than `#Preview` so that they compile without Xcode's macro plug-ins and are type-checked with the rest
// (`scripts/ios-typecheck.sh`); an app previews its own screens the same way.

@MainActor
struct SignInPreviews: PreviewProvider {
    static var previews: some View {
        Group {
            SignIn().padding().environment(LatchkeyState.preview()).previewDisplayName("Sign in")
            SignIn().padding().environment(LatchkeyState.preview(locale: "ar"))
                .environment(\.layoutDirection, .rightToLeft).previewDisplayName("Sign in, Arabic")
            SignIn().padding()
                .environment(LatchkeyState.preview())
                .latchkeyTheme(LatchkeyTheme(accent: .indigo, titleFont: .largeTitle.bold(), cornerRadius: 20, spacing: 24))
                .previewDisplayName("Sign in, themed")
            SignUp().padding().environment(LatchkeyState.preview()).previewDisplayName("Create account")
        }
    }
}

@MainActor
struct FlowPartsPreviews: PreviewProvider {
    static var previews: some View {
        let state = LatchkeyState.preview()
        let model = AuthFlowModel.preview(
            state: state, values: ["username": "ada@example.com"], fieldErrors: ["password": "This field is required"],
            error: "The email address or password is incorrect.")
        return Group {
            FlowStepView(model: model).padding().previewDisplayName("A step with errors")
            VStack {
                ForEach(model.visibleInputs) { FlowInputField(model: model, input: $0) }
                ForEach(model.actions) { FlowActionButton(model: model, action: $0, isPrimary: $0.ref == model.primaryAction?.ref) }
            }
            .padding()
            .previewDisplayName("Fields and buttons, recomposed")
        }
        .environment(state)
    }
}

@MainActor
struct SessionPreviews: PreviewProvider {
    static var previews: some View {
        Group {
            VStack {
                SignedIn { Text("Signed in as \(User.preview.displayName ?? "")") }
                SignOutButton()
            }
            .environment(LatchkeyState.preview(user: .preview))
            .previewDisplayName("Signed in")
            VStack {
                SignedOut { SignInButton() }
            }
            .environment(LatchkeyState.preview(error: "Your session has ended. Please sign in again."))
            .previewDisplayName("Signed out")
            UserProfile().padding().environment(LatchkeyState.preview(user: .preview)).previewDisplayName("Profile")
            Form { DeleteAccountButton() }.environment(LatchkeyState.preview(user: .preview)).previewDisplayName("Delete account")
            Form { DeleteAccountButton() }.environment(LatchkeyState.preview(user: .preview, locale: "ar"))
                .environment(\.layoutDirection, .rightToLeft).previewDisplayName("Delete account, Arabic")
        }
    }
}
@MainActor
struct AccountPreviews: PreviewProvider {
    static var previews: some View {
        Group {
            Form {
                SecondFactorsView()
                PasskeysView()
                SessionsView()
                LinkedAccountsView()
            }
            .environment(LatchkeyState.preview(user: .preview))
            .previewDisplayName("Account")
            Form {
                SecondFactorsView()
                SessionsView()
            }
            .environment(LatchkeyState.preview(user: .preview, locale: "ar"))
            .environment(\.layoutDirection, .rightToLeft)
            .previewDisplayName("Account, Arabic")
            QRCodeImage(text: "otpauth://totp/Latchkey:ada@example.com?secret=JBSWY3DPEHPK3PXP&issuer=Latchkey", label: "QR code")
                .frame(width: 200, height: 200)
                .previewDisplayName("QR code")
        }
    }
}
#endif
