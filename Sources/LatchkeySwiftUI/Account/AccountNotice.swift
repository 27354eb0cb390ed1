import Foundation
import Latchkey

/// What an account screen (``SecondFactorsModel``, ``PasskeysModel``, ``SessionsModel``, ``LinkedAccountsModel``)
/// says after its last change: the outcome, or why it failed, in the person's language — never the SDK's technical
/// text (that is logged once as a `LatchkeyState.diagnosis` when it points at the app's set-up).
public struct AccountNotice: Sendable, Equatable {
    /// What kind of notice it is, to style it.
    public enum Kind: Sendable, Equatable {
        /// The change was made ("Authenticator app added.").
        case done
        /// The change failed; ``AccountNotice/code`` says how.
        case failed
        /// The sign-in is too old for the change: the person signs in again (`prompt=login`), then tries once more.
        case needsSignIn
    }

    /// What kind of notice it is.
    public var kind: Kind
    /// The text to show.
    public var message: String
    /// The failure's code, for an app's own logic (nil for `.done`).
    public var code: LatchkeyError.Code?

    /// A notice.
    public init(kind: Kind, message: String, code: LatchkeyError.Code? = nil) {
        self.kind = kind; self.message = message; self.code = code
    }

    /// True for a failure or a request to sign in again.
    public var isProblem: Bool { kind != .done }
}

/// A failed account call, already in the person's words.
struct AccountCallFailure: Error {
    let notice: AccountNotice
    /// The person closed a page the call showed (linking a provider, a passkey sheet): nothing to say.
    var isCancel: Bool { notice.code == .canceled }
}

extension LatchkeyState {
    /// Runs one call of an account screen, counted in `isLoading`. A failure comes back as the notice to show: a
    /// sign-in too old for the change asks for a new one (and calls `onSignInRequired`), anything else says what went
    /// wrong in the person's language; a set-up mistake is also diagnosed (logged once).
    func accountCall<T>(
        onSignInRequired: (@MainActor () -> Void)?, _ body: () async throws -> T
    ) async -> Result<T, AccountCallFailure> {
        do {
            return .success(try await tracked { try await body() })
        } catch {
            let failure = error as? LatchkeyError ?? LatchkeyError(.unknownError, String(describing: type(of: error)))
            diagnose(failure)
            if failure.code == .reauthenticationRequired {
                onSignInRequired?()
                return .failure(
                    AccountCallFailure(notice: AccountNotice(kind: .needsSignIn, message: i18n.t(.signInAgainToContinue), code: failure.code)))
            }
            return .failure(AccountCallFailure(notice: AccountNotice(kind: .failed, message: i18n.message(for: failure), code: failure.code)))
        }
    }

    /// One change of an account screen: `body` makes it and returns the text that says it was made (nil: nothing to
    /// say). Returns the notice to show: that text, the failure in the person's words, or nil when the person closed
    /// the page or sheet the change showed.
    func accountChange(onSignInRequired: (@MainActor () -> Void)?, _ body: () async throws -> String?) async -> AccountNotice? {
        switch await accountCall(onSignInRequired: onSignInRequired, body) {
        case .success(let done): done.map { AccountNotice(kind: .done, message: $0) }
        case .failure(let failure): failure.isCancel ? nil : failure.notice
        }
    }

    /// A day in the person's language ("7 Dec 2026"; with `.long`, "7 December 2026", "2026年12月7日").
    func day(_ date: Date, style: DateFormatter.Style = .medium) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: i18n.language)
        formatter.dateStyle = style
        formatter.timeStyle = .none
        return formatter.string(from: date)
    }

    /// `key`'s text with each `{name}` replaced.
    func text(_ key: UIText, _ values: [String: String]) -> String {
        values.reduce(i18n.t(key)) { text, pair in text.replacingOccurrences(of: "{\(pair.key)}", with: pair.value) }
    }
}
