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
}
