import Foundation
import Latchkey
import Observation

/// What every account screen (``SecondFactorsModel``, ``PasskeysModel``, ``SessionsModel``, ``LinkedAccountsModel``)
/// does around its calls, in one place: one call at a time (``isLoading``), the outcome as an ``AccountNotice`` in the
/// person's words, and the list read again after each change (another device may have changed it too), keeping the
/// change's notice.
@MainActor @Observable
final class AccountActivity {
    /// True while a call is under way.
    private(set) var isLoading = false
    /// The last change's outcome or failure.
    private(set) var notice: AccountNotice?
    /// Called when the sign-in is too old for a change.
    @ObservationIgnored var onSignInRequired: (@MainActor () -> Void)?
    @ObservationIgnored let state: LatchkeyState

    init(state: LatchkeyState, onSignInRequired: (@MainActor () -> Void)?) {
        self.state = state
        self.onSignInRequired = onSignInRequired
    }

    /// Reads the screen's list (`read`) and shows it (`show`); a failure becomes the notice.
    func load<T>(_ read: () async throws -> T, show: (T) -> Void) async {
        guard !isLoading else { return }
        isLoading = true
        defer { isLoading = false }
        await reread(read, show: show, keepingNotice: false)
    }

    /// One change: `body` makes it and returns the text that says so (nil: nothing to say). Then the list is read
    /// again, unless `readAfterSuccess` is false and the change succeeded (this device's own session ended: there is
    /// nothing left to read).
    func change<T>(
        _ body: () async throws -> String?, readAfterSuccess: Bool = true, read: () async throws -> T, show: (T) -> Void
    ) async {
        guard !isLoading, !state.isPreview else { return }  // a preview has no server
        isLoading = true
        defer { isLoading = false }
        notice = nil
        notice = await state.accountChange(onSignInRequired: onSignInRequired, body)
        if !readAfterSuccess, notice?.isProblem == false { return }
        await reread(read, show: show, keepingNotice: true)
    }

    private func reread<T>(_ read: () async throws -> T, show: (T) -> Void, keepingNotice: Bool) async {
        switch await state.accountCall(onSignInRequired: nil, read) {
        case .success(let loaded):
            show(loaded)
            if !keepingNotice { notice = nil }
        case .failure(let failure):
            if !keepingNotice || notice == nil { notice = failure.notice }
        }
    }
}
