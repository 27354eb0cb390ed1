import Foundation
import Latchkey
import Observation

/// The account-deletion button (`DeleteAccountButton`): a tap asks for confirmation, naming what is lost; only the
/// confirmation deletes (`LatchkeySession.deleteAccount()`). A sign-in too old for it asks the person to
/// sign in again instead of failing vaguely; afterwards the state is signed out and `onDeleted` is called.
@MainActor @Observable
public final class DeleteAccountModel {
    /// Where the button is.
    public enum Phase: Equatable, Sendable {
        /// Nothing asked yet (or the person cancelled).
        case idle
        /// The confirmation is shown.
        case confirming
        /// The request is under way.
        case deleting
        /// The server confirmed: deleted, or scheduled for deletion at `AccountDeletion.deletionDueAt`.
        case done(AccountDeletion)
        /// The sign-in is too old: the person must sign in again, then delete once more.
        case needsSignIn
        /// Another failure; ``message`` says it in the person's language.
        case failed
    }

    /// Where the button is.
    public private(set) var phase: Phase = .idle
    /// The text to show under the button after a confirmation: the outcome, or why it failed (the person's words,
    /// never the SDK's technical ones).
    public private(set) var message: String?
    /// Called once the server confirmed, with the state already signed out.
    @ObservationIgnored public var onDeleted: (@MainActor (AccountDeletion) -> Void)?
    /// Called when the sign-in is too old, so the app can present its sign-in (with `prompt=login`).
    @ObservationIgnored public var onSignInRequired: (@MainActor () -> Void)?
    @ObservationIgnored private let state: LatchkeyState
    /// The deletion under way, for ``confirm()`` to wait on.
    @ObservationIgnored private var deleting: Task<Void, Never>?

    /// A button over `state`.
    public init(
        state: LatchkeyState, onDeleted: (@MainActor (AccountDeletion) -> Void)? = nil, onSignInRequired: (@MainActor () -> Void)? = nil
    ) {
        self.state = state
        self.onDeleted = onDeleted
        self.onSignInRequired = onSignInRequired
    }

    /// The button's label.
    public var label: String { state.i18n.t(phase == .deleting ? .deleting : .deleteAccount) }
    /// The confirmation's title.
    public var confirmationTitle: String { state.i18n.t(.deleteAccountTitle) }
    /// The confirmation's text: what is lost, and that it cannot be undone.
    public var warning: String { state.i18n.t(.deleteAccountWarning) }
    /// The confirming action's label.
    public var confirmLabel: String { state.i18n.t(.delete) }
    /// The cancelling action's label.
    public var cancelLabel: String { state.i18n.t(.cancel) }
    /// True while a tap would do nothing: signed out, deleting, or deleted.
    public var isDisabled: Bool {
        if case .done = phase { return true }
        return phase == .deleting || !state.isSignedIn
    }

    /// Whether the confirmation is shown (a binding for `confirmationDialog` or `alert`).
    public var isConfirming: Bool {
        get { phase == .confirming }
        set {
            if newValue { tap() } else if phase == .confirming { cancel() }
        }
    }

    /// The button's action: shows the confirmation.
    public func tap() {
        guard !isDisabled else { return }
        message = nil
        phase = .confirming
    }

    /// Closes the confirmation without deleting anything.
    public func cancel() {
        guard phase == .confirming else { return }
        phase = .idle
    }

    /// The confirmation's action as the dialog's button calls it: starts the deletion at once. It must not wait for a
    /// task: SwiftUI closes the dialog (``isConfirming`` set to false, which cancels a confirmation still shown) right
    /// after the button's action returns, before any task it started runs.
    public func confirmFromDialog() {
        guard phase == .confirming else { return }
        phase = .deleting
        deleting = Task { await self.delete() }
    }

    /// Deletes the account; only after ``tap()`` showed the confirmation. Returns when the server answered.
    public func confirm() async {
        confirmFromDialog()
        await deleting?.value
    }

    private func delete() async {
        let deleted = await state.accountCall(onSignInRequired: onSignInRequired) { [state] in
            try await state.session.deleteAccount()
        }
        switch deleted {
        case .success(let outcome):
            phase = .done(outcome)
            message =
                outcome.deletionDueAt.map { state.text(.accountDeletionScheduled, ["date": state.day($0, style: .long)]) }
                ?? state.i18n.t(.accountDeleted)
            onDeleted?(outcome)
        case .failure(let failure):
            phase = failure.notice.kind == .needsSignIn ? .needsSignIn : .failed
            message = failure.notice.message
        }
    }
}
