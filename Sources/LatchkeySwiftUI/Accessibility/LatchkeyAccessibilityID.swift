/// The accessibility identifiers the components set, for an app's UI tests (`app.textFields["latchkey.input.username"]`).
/// They are stable across languages and releases (a change is a breaking change in `CHANGELOG.md`); labels are not.
public enum LatchkeyAccessibilityID {
    /// A flow step's field for input `identifier` (`latchkey.input.username`, `latchkey.input.password`).
    public static func input(_ identifier: String) -> String { "latchkey.input.\(identifier)" }
    /// The error under a flow step's field for input `identifier`.
    public static func fieldError(_ identifier: String) -> String { "latchkey.input.\(identifier).error" }
    /// A flow step's button for action `ref` (`latchkey.action.action_submit`).
    public static func action(_ ref: String) -> String { "latchkey.action.\(ref)" }
    /// A flow step's heading.
    public static let title = "latchkey.title"
    /// The error of a flow step, or of the whole flow.
    public static let error = "latchkey.error"
    /// A flow step's notice ("we sent a code").
    public static let notice = "latchkey.notice"
    /// The button that runs the passkey ceremony a step asks for.
    public static let passkey = "latchkey.passkey"
    /// The button that opens an identity provider's page again.
    public static let continueRedirect = "latchkey.continue"
    /// "Start over" after a flow ended.
    public static let startOver = "latchkey.startOver"
    /// The "Use a recovery code" button of a second-factor step.
    public static let useRecoveryCode = "latchkey.useRecoveryCode"
    /// `SignInButton`.
    public static let signInButton = "latchkey.signIn"
    /// `SignOutButton`.
    public static let signOutButton = "latchkey.signOut"
    /// A `UserProfile` field for key `key` (`latchkey.profile.given_name`).
    public static func profileField(_ key: String) -> String { "latchkey.profile.\(key)" }
    /// `UserProfile`'s save button.
    public static let profileSave = "latchkey.profile.save"
    /// `DeleteAccountButton`.
    public static let deleteAccount = "latchkey.account.delete"
    /// The confirming action of `DeleteAccountButton`'s confirmation.
    public static let deleteAccountConfirm = "latchkey.account.delete.confirm"
    /// The outcome (or failure) `DeleteAccountButton` shows under itself.
    public static let deleteAccountMessage = "latchkey.account.delete.message"
    /// The confirming action of an account component's confirmation (remove, delete, sign out, unlink).
    public static let confirm = "latchkey.account.confirm"
    /// The outcome (or failure) an account component shows under its list.
    public static let accountNotice = "latchkey.account.notice"
    /// `SecondFactorsView`'s remove button for factor `kind` (`latchkey.factors.totp.remove`).
    public static func removeSecondFactor(_ kind: String) -> String { "latchkey.factors.\(kind).remove" }
    /// `SecondFactorsView`'s "Add an authenticator app".
    public static let addAuthenticatorApp = "latchkey.factors.totp.add"
    /// The setup key in the authenticator app's setup.
    public static let setupKey = "latchkey.factors.totp.key"
    /// The code field in the authenticator app's setup.
    public static let authenticatorCode = "latchkey.factors.totp.code"
    /// The verify button in the authenticator app's setup.
    public static let verifyAuthenticatorApp = "latchkey.factors.totp.verify"
    /// `SecondFactorsView`'s "Send me codes by email".
    public static let turnOnEmailCodes = "latchkey.factors.email.add"
    /// `SecondFactorsView`'s recovery codes button.
    public static let createRecoveryCodes = "latchkey.factors.recoveryCodes.create"
    /// The new recovery codes, shown once.
    public static let recoveryCodes = "latchkey.factors.recoveryCodes"
    /// `PasskeysView`'s "Add a passkey".
    public static let addPasskey = "latchkey.passkeys.add"
    /// `PasskeysView`'s rename button for passkey `id`.
    public static func renamePasskey(_ id: String) -> String { "latchkey.passkeys.\(id).rename" }
    /// `PasskeysView`'s delete button for passkey `id`.
    public static func deletePasskey(_ id: String) -> String { "latchkey.passkeys.\(id).delete" }
    /// The name field of `PasskeysView`'s rename alert.
    public static let passkeyName = "latchkey.passkeys.name"
    /// `SessionsView`'s sign-out button for session `id`.
    public static func endSession(_ id: String) -> String { "latchkey.sessions.\(id).end" }
    /// `SessionsView`'s "Sign out everywhere else".
    public static let signOutOtherSessions = "latchkey.sessions.endOthers"
    /// `LinkedAccountsView`'s "Link …" button for provider `id`.
    public static func linkProvider(_ id: String) -> String { "latchkey.identities.\(id).link" }
    /// `LinkedAccountsView`'s unlink button for provider `id`.
    public static func unlinkProvider(_ id: String) -> String { "latchkey.identities.\(id).unlink" }
}
