import Foundation
import Latchkey
import Observation

/// The person's own second factors (`SecondFactorsView`): the list, adding an authenticator app (its QR code and setup
/// key shown once, confirmed by the app's first code), turning on codes by email, recovery codes (shown once), and
/// removing a factor after a confirmation.
///
/// Every change needs a recent sign-in: when the server says the sign-in is too old, ``notice`` asks the person to
/// sign in again and `onSignInRequired` is called; nothing changes. The server mails the person about each change.
///
/// Secrets live only as long as the screen shows them: the authenticator app's key until it is confirmed or
/// cancelled, the recovery codes until ``dismissRecoveryCodes()``. None is logged (the SDK's values print redacted).
@MainActor @Observable
public final class SecondFactorsModel {
    /// The factors as last loaded; nil before the first load.
    public private(set) var factors: SecondFactors?
    /// True while a call is under way.
    public var isLoading: Bool { activity.isLoading }
    /// The last change's outcome or failure, in the person's words.
    public var notice: AccountNotice? { activity.notice }
    /// The authenticator app being added, while its QR code and setup key are shown.
    public private(set) var authenticatorSetup: TOTPEnrollment?
    /// The code the person types from the authenticator app.
    public var code = ""
    /// A new set of recovery codes, shown until ``dismissRecoveryCodes()``.
    public private(set) var newRecoveryCodes: RecoveryCodes?
    /// The factor the person asked to remove, while the confirmation is shown.
    public private(set) var removal: SecondFactorKind?
    /// Whether the confirmation before a new set of recovery codes replaces the current one is shown.
    public var isConfirmingReplacement = false

    /// Called when the sign-in is too old for a change, so the app can present its sign-in (with `prompt=login`).
    public var onSignInRequired: (@MainActor () -> Void)? {
        get { activity.onSignInRequired }
        set { activity.onSignInRequired = newValue }
    }
    private let activity: AccountActivity
    private var state: LatchkeyState { activity.state }

    /// A screen over `state`'s session.
    public init(state: LatchkeyState, onSignInRequired: (@MainActor () -> Void)? = nil) {
        activity = AccountActivity(state: state, onSignInRequired: onSignInRequired)
    }

    // MARK: What the screen shows

    /// The section's title.
    public var title: String { state.i18n.t(.secondFactors) }
    /// The text when the account has no second factor.
    public var emptyText: String { state.i18n.t(.noSecondFactor) }
    /// A factor kind's name ("Authenticator app", "Codes by email").
    public func name(of kind: SecondFactorKind) -> String {
        state.i18n.t(kind == .totp ? .authenticatorApp : .emailCodes)
    }
    /// The line under a factor: when it was added, or why it cannot be used.
    public func detail(of factor: SecondFactor) -> String {
        factor.isUsable ? state.text(.addedOn, ["date": state.day(factor.createdAt)]) : state.i18n.t(.verifyEmailToUse)
    }
    /// "7 of 10 left", when the account has recovery codes.
    public var recoveryCodesSummary: String? {
        factors?.recoveryCodes.map { state.text(.recoveryCodesLeft, ["remaining": "\($0.remaining)", "total": "\($0.total)"]) }
    }
    /// True when three codes or fewer are left: the screen suggests a new set.
    public var recoveryCodesAreLow: Bool { (factors?.recoveryCodes?.remaining ?? Int.max) <= 3 }
    /// True when an authenticator app can be added (an account has one at most; a new one replaces it only through
    /// removing the old one first, so the person never loses both by mistake).
    public var canAddAuthenticatorApp: Bool { factors.map { !$0.factors.contains { $0.kind == .totp } } ?? false }
    /// True when codes by email can be turned on.
    public var canTurnOnEmailCodes: Bool { factors.map { !$0.factors.contains { $0.kind == .email } } ?? false }
    /// True when recovery codes can be made: they stand in for a usable factor, so one is needed.
    public var canCreateRecoveryCodes: Bool { factors?.factors.contains(where: \.isUsable) ?? false }
    /// The recovery codes button's label ("Create recovery codes", or "Create new recovery codes" over a set).
    public var createRecoveryCodesLabel: String {
        state.i18n.t(factors?.recoveryCodes == nil ? .createRecoveryCodes : .createNewRecoveryCodes)
    }
    /// The removal confirmation's title ("Remove Authenticator app?").
    public var removalTitle: String { state.text(.removeFactorTitle, ["factor": removal.map(name(of:)) ?? ""]) }
    /// The removal confirmation's text.
    public var removalWarning: String { state.i18n.t(.removeFactorWarning) }
    /// The title of the confirmation before a new set replaces the current one.
    public var replacementTitle: String { state.i18n.t(.replaceRecoveryCodesTitle) }
    /// That confirmation's text: the current codes stop working.
    public var replacementWarning: String { state.i18n.t(.replaceRecoveryCodesWarning) }
    /// False for the last usable factor when a second factor is required (the server refuses it too).
    public func canRemove(_ kind: SecondFactorKind) -> Bool {
        guard let factors, factors.isRequired else { return true }
        let usable = factors.factors.filter(\.isUsable)
        return !(usable.count == 1 && usable.first?.kind == kind)
    }
    /// Why a factor cannot be removed, when it cannot.
    public func removalHint(_ kind: SecondFactorKind) -> String? { canRemove(kind) ? nil : state.i18n.t(.factorRequired) }
    /// The setup key in groups of four, easier to type by hand.
    public var setupKey: String? {
        authenticatorSetup.map { setup in
            let characters = Array(setup.secret)
            return stride(from: 0, to: characters.count, by: 4).map { String(characters[$0..<min($0 + 4, characters.count)]) }
                .joined(separator: " ")
        }
    }
    /// True when ``code`` is six digits (spaces aside; any script's decimal digits, as an Arabic keyboard types them).
    public var canVerifyCode: Bool { Self.asciiDigits(code)?.count == 6 }
    /// The recovery codes as lines of text, to save or share.
    public var recoveryCodesText: String? { newRecoveryCodes?.codes.joined(separator: "\n") }

    /// Whether the setup sheet is shown (a binding; closing it cancels the setup).
    public var isAddingAuthenticatorApp: Bool {
        get { authenticatorSetup != nil }
        set { if !newValue { cancelAuthenticatorApp() } }
    }
    /// Whether the recovery codes are shown (a binding; closing them forgets them).
    public var isShowingRecoveryCodes: Bool {
        get { newRecoveryCodes != nil }
        set { if !newValue { dismissRecoveryCodes() } }
    }
    /// Whether the removal's confirmation is shown (a binding).
    public var isConfirmingRemoval: Bool {
        get { removal != nil }
        set { if !newValue { cancelRemoval() } }
    }

    // MARK: What the person does

    /// Loads the factors (the view calls it when it appears).
    public func load() async {
        if state.isPreview { factors = factors ?? .preview; return }
        await activity.load(read, show: show)
    }

    /// Starts adding an authenticator app: a new key, shown once with its QR code.
    public func startAuthenticatorApp() async {
        await change { [state] in
            self.authenticatorSetup = try await state.session.startTOTPEnrollment()
            self.code = ""
            return nil
        }
    }

    /// Sends the authenticator app's first code; the app is added when it is right. A wrong code keeps the setup
    /// open for the next one; any other failure (an expired setup, too many wrong codes, a sign-in too old) closes it
    /// and forgets the key.
    public func confirmAuthenticatorApp() async {
        guard !isLoading, let setup = authenticatorSetup, let typed = Self.asciiDigits(code), typed.count == 6 else { return }
        code = ""
        await change { [state] in
            do {
                try await state.session.confirmTOTPEnrollment(setup, code: typed)
            } catch let error as LatchkeyError where error.code == .mfaFailed && error.statusCode != 429 {
                throw error  // a wrong code: the next one may be right
            } catch {
                self.authenticatorSetup = nil
                throw error
            }
            self.authenticatorSetup = nil
            return state.text(.factorAdded, ["factor": self.name(of: .totp)])
        }
    }

    /// Closes the setup without adding anything; the key is forgotten.
    public func cancelAuthenticatorApp() {
        authenticatorSetup = nil
        code = ""
    }

    /// Turns on codes by email (the account's email address must be verified).
    public func turnOnEmailCodes() async {
        await change { [state] in
            try await state.session.enableEmailCodes()
            return state.text(.factorAdded, ["factor": self.name(of: .email)])
        }
    }

    /// The recovery codes button's action: over a current set it asks first (``isConfirmingReplacement``), since the
    /// current codes stop working; otherwise it makes the set.
    public func requestRecoveryCodes() async {
        guard !isLoading else { return }
        if factors?.recoveryCodes != nil {
            isConfirmingReplacement = true
            return
        }
        await createRecoveryCodes()
    }

    /// Makes a new set of recovery codes (the earlier set stops working) and shows it once.
    public func createRecoveryCodes() async {
        isConfirmingReplacement = false
        await change { [state] in
            self.newRecoveryCodes = try await state.session.generateRecoveryCodes()
            return state.i18n.t(.recoveryCodesCreated)
        }
    }

    /// Hides the recovery codes; they are forgotten here.
    public func dismissRecoveryCodes() { newRecoveryCodes = nil }

    /// Asks to remove a factor: shows the confirmation.
    public func askToRemove(_ kind: SecondFactorKind) {
        guard !isLoading else { return }
        removal = kind
    }

    /// Closes the confirmation; nothing is removed.
    public func cancelRemoval() { removal = nil }

    /// Removes `kind` (the confirmation's action: SwiftUI closes the dialog, clearing ``removal``, before the action's
    /// task runs, so the factor is passed in).
    public func remove(_ kind: SecondFactorKind) async {
        removal = nil
        await change { [state] in
            try await state.session.removeSecondFactor(kind)
            return state.text(.factorRemoved, ["factor": self.name(of: kind)])
        }
    }

    // MARK: Internals

    /// `text` as ASCII digits, spaces dropped; nil when it holds anything but decimal digits and spaces. Decimal digits
    /// of any script count (٣ is 3), so a code typed on an Arabic number pad is not a wrong code spending the budget.
    static func asciiDigits(_ text: String) -> String? {
        var digits = ""
        for character in text where character != " " {
            guard character.unicodeScalars.count == 1, let scalar = character.unicodeScalars.first,
                scalar.properties.numericType == .decimal, let value = character.wholeNumberValue
            else { return nil }
            digits += String(value)
        }
        return digits
    }

    private func change(_ body: () async throws -> String?) async {
        await activity.change(body, read: read, show: show)
    }

    private func read() async throws -> SecondFactors { try await state.session.secondFactors() }
    private func show(_ loaded: SecondFactors) { factors = loaded }
}
