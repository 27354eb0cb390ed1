import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeySwiftUI
import Testing

/// The account-deletion button's view model against the real server's `DELETE /users/me`: nothing happens without the
/// confirmation, the outcome in the person's language, the state signed out, a grace period's day, and a sign-in too
/// old for it turned into "sign in again" with nothing deleted.
@MainActor
@Suite("SwiftUI view models: deleting the account")
struct DeleteAccountModelTests {
    @Test("a tap only asks; cancel keeps everything; the confirmation deletes, signs out and says so")
    func confirmThenDelete() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = try await server.signedInUIState()
        var deleted: [AccountDeletion] = []
        let model = DeleteAccountModel(state: state, onDeleted: { deleted.append($0) })
        #expect(model.label == "Delete account" && !model.isDisabled && model.phase == .idle)

        await model.confirm()  // without the confirmation shown: nothing
        model.tap()
        #expect(model.phase == .confirming && model.isConfirming)
        #expect(model.warning.contains("cannot be undone") && model.confirmLabel == "Delete" && model.cancelLabel == "Cancel")
        model.isConfirming = false  // the dialog was dismissed
        #expect(model.phase == .idle)
        #expect(try await server.server.user(username: "demo@example.com") != nil, "nothing was deleted without the confirmation")

        model.tap()
        // SwiftUI's order: the dialog's button runs, then the dialog closes (`isConfirming = false`), then tasks run.
        model.confirmFromDialog()
        model.isConfirming = false
        #expect(model.phase == .deleting, "closing the dialog after its button does not cancel")
        await model.confirm()  // waits for the deletion under way, starts no other
        #expect(model.phase == .done(AccountDeletion(deletionDueAt: nil)) && deleted == [AccountDeletion(deletionDueAt: nil)])
        #expect(model.message == "Your account was deleted." && model.isDisabled)
        #expect(try await server.server.user(username: "demo@example.com") == nil)
        try await eventually { !state.isSignedIn }
        #expect(state.user == nil && state.error == nil)
        #expect(try await state.client.isSignedIn() == false, "the tokens are forgotten on the device")
    }

    @Test("a grace period: the day it ends, in the person's language; the state is signed out all the same")
    func gracePeriodInFrench() async throws {
        let server = try await startServer { $0.accountDeletionGraceDays = 30 }
        defer { Task { await server.stop() } }
        let state = try await server.signedInUIState(locale: "fr")
        let model = DeleteAccountModel(state: state)
        #expect(model.label == "Supprimer le compte")
        model.tap()
        let before = server.clock.now
        await model.confirm()
        let after = server.clock.now
        guard case .done(let outcome) = model.phase, let due = outcome.deletionDueAt else {
            Issue.record("expected a scheduled deletion, got \(model.phase)")
            return
        }
        // Whole seconds on the wire: the day the server decided, between the clock's readings around the request.
        let grace: TimeInterval = 30 * 86_400
        #expect(due >= before.addingTimeInterval(grace - 1) && due <= after.addingTimeInterval(grace))
        let day = DateFormatter()
        day.locale = Locale(identifier: "fr")
        day.dateStyle = .long
        #expect(model.message?.contains(day.string(from: due)) == true, "\(model.message ?? "")")
        #expect(model.message?.contains("{date}") == false)
        try await eventually { !state.isSignedIn }
        #expect(try await server.server.user(username: "demo@example.com") != nil, "kept until the period ends")
    }

    @Test("a sign-in too old: the person is asked to sign in again, nothing is deleted, the session stays")
    func tooOldASignIn() async throws {
        let (server, state) = try await TestServer.signedInWithOneMinuteRecentAuth()
        defer { Task { await server.stop() } }
        server.advanceClock(61)
        var asked = 0
        let model = DeleteAccountModel(state: state, onSignInRequired: { asked += 1 })
        model.tap()
        await model.confirm()
        #expect(model.phase == .needsSignIn && asked == 1)
        #expect(model.message == "For your security, sign in again, then try once more.")
        #expect(state.isSignedIn && state.diagnosis == nil, "not a set-up mistake, and the session is kept")
        #expect(try await server.server.user(username: "demo@example.com") != nil)
        model.tap()
        #expect(model.phase == .confirming, "the person can try again after signing in")
    }
}
