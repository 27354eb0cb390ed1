import Foundation

/// The texts the built-in flows' components refer to (`{{ t(namespace:key) }}`), served by `GET /flow/meta` so
/// clients can render their own UI. English here; the localization work adds the other languages by key.
enum FlowTexts {
    static let english: [String: [String: String]] = [
        "signin": [
            "forms.credentials.title": "Sign in",
            "forms.credentials.username.label": "Username or email",
            "forms.credentials.password.label": "Password",
            "forms.credentials.submit.label": "Sign in",
            "forms.credentials.passkey.label": "Sign in with a passkey",
            "forms.passkey.title": "Use your passkey",
            "forms.passkey.submit.label": "Continue",
            "forms.totp.title": "Enter the code from your authenticator app",
            "forms.totp.otp.label": "6-digit code",
            "forms.totp.submit.label": "Verify",
            "forms.email_otp.title": "Enter the code we emailed you",
            "forms.email_otp.otp.label": "6-digit code",
            "forms.email_otp.submit.label": "Verify",
            "forms.email_otp.resend.label": "Send a new code",
        ],
        "signup": [
            "forms.invitation.title": "Enter your invitation code",
            "forms.invitation.code.label": "Invitation code",
            "forms.invitation.submit.label": "Continue",
            "forms.credentials.title": "Create your account",
            "forms.credentials.username.label": "Username",
            "forms.credentials.password.label": "Password",
            "forms.credentials.submit.label": "Continue",
            "forms.credentials.passkey.label": "Use a passkey instead of a password",
            "forms.passkey.title": "Create your passkey",
            "forms.passkey.submit.label": "Continue",
            "forms.attributes.title": "Tell us about yourself",
            "forms.attributes.submit.label": "Create account",
        ],
        "recovery": [
            "forms.identify.title": "Reset your password",
            "forms.identify.username.label": "Username or email",
            "forms.identify.submit.label": "Send code",
            "forms.code.title": "Enter the code we emailed you",
            "forms.code.code.label": "Confirmation code",
            "forms.code.submit.label": "Verify",
            "forms.code.resend.label": "Send a new code",
            "forms.password.title": "Choose a new password",
            "forms.password.password.label": "New password",
            "forms.password.submit.label": "Reset password",
        ],
    ]

    /// Labels of the user-schema attributes (dynamic registration inputs), in the `user` namespace.
    static func attributeLabels(_ schema: UserSchema) -> [String: String] {
        Dictionary(uniqueKeysWithValues: schema.attributes.map { ("attributes.\($0.name).label", $0.displayName) })
    }
}
