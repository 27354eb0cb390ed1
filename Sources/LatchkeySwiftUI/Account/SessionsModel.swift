import Foundation
import Latchkey
import Observation

/// Where the person is signed in (`SessionsView`): each sign-in session with its apps, this device's marked, ending
/// one after a confirmation (a lost phone's), and signing out everywhere else.
///
/// Ending this device's own session signs the app out (the state follows the client's `.signedOut`). No recent
/// sign-in is needed for any of it: ending a session only ever takes access away.
@MainActor @Observable
public final class SessionsModel {
    /// What the confirmation is about.
    public enum Ending: Sendable, Equatable {
        /// One session.
        case session(SignInSession)
        /// Every session but this device's.
        case allOthers
    }

    /// The sessions as last loaded, this device's first, then newest first; empty before the first load.
    public private(set) var sessions: [SignInSession] = []
    /// True once a load succeeded.
    public private(set) var isLoaded = false
    /// True while a call is under way.
    public var isLoading: Bool { activity.isLoading }
    /// The last change's outcome or failure, in the person's words.
    public var notice: AccountNotice? { activity.notice }
    /// What the person asked to end, while the confirmation is shown.
    public private(set) var ending: Ending?

    private let activity: AccountActivity
    private var state: LatchkeyState { activity.state }

    /// A screen over `state`'s session (no change here needs a recent sign-in: ending a session only takes access away).
    public init(state: LatchkeyState) { activity = AccountActivity(state: state, onSignInRequired: nil) }

    // MARK: What the screen shows

    /// The section's title.
    public var title: String { state.i18n.t(.sessions) }
    /// The mark on this device's session.
    public var thisDeviceLabel: String { state.i18n.t(.thisDevice) }
    /// A session's first line: the apps signed in through it ("Latchkey Demo, Console").
    public func name(of session: SignInSession) -> String {
        let apps = session.applications.map(\.clientName).filter { !$0.isEmpty }
        return apps.isEmpty ? state.i18n.t(session.isCurrent ? .thisDevice : .signedInSession) : apps.joined(separator: ", ")
    }
    /// A session's second line: when it began.
    public func detail(of session: SignInSession) -> String? {
        (session.authenticatedAt ?? session.createdAt).map { state.text(.signedInOn, ["date": state.day($0)]) }
    }
    /// True when other sessions than this device's are listed.
    public var hasOtherSessions: Bool { sessions.contains { !$0.isCurrent } }
    /// The confirmation's title: this device's own session, another one, or all the others.
    public var endingTitle: String {
        switch ending {
        case .allOthers: state.i18n.t(.signOutOthersTitle)
        case .session(let session) where session.isCurrent: state.i18n.t(.endOwnSessionTitle)
        default: state.i18n.t(.endSessionTitle)
        }
    }
    /// The confirmation's text.
    public var endingWarning: String {
        if case .session(let session) = ending, session.isCurrent { return state.i18n.t(.endOwnSessionWarning) }
        return state.i18n.t(.endSessionWarning)
    }

    /// Whether the confirmation is shown (a binding).
    public var isConfirmingEnding: Bool {
        get { ending != nil }
        set { if !newValue { ending = nil } }
    }

    // MARK: What the person does

    /// Loads the sessions (the view calls it when it appears).
    public func load() async {
        if state.isPreview { sessions = isLoaded ? sessions : SignInSession.previews; isLoaded = true; return }
        await activity.load(read, show: show)
    }

    /// Asks to end `session`: shows the confirmation.
    public func askToEnd(_ session: SignInSession) {
        guard !isLoading else { return }
        ending = .session(session)
    }

    /// Asks to sign out everywhere but this device: shows the confirmation.
    public func askToEndOthers() {
        guard !isLoading, hasOtherSessions else { return }
        ending = .allOthers
    }

    /// Ends `ending` (the confirmation's action: SwiftUI closes the dialog, clearing ``ending``, before the action's
    /// task runs, so what to end is passed in). After this device's own session the list is not reloaded: the app is
    /// signed out.
    public func end(_ ending: Ending) async {
        guard !isLoading else { return }
        self.ending = nil
        let ownSession: Bool
        let body: () async throws -> String?
        switch ending {
        case .session(let session):
            ownSession = session.isCurrent
            body = { [state] in
                try await state.session.endSession(id: session.id)
                return state.i18n.t(.sessionEnded)
            }
        case .allOthers:
            ownSession = false
            body = { [state] in
                try await state.session.signOutEverywhere(keepingThisDevice: true)
                return state.i18n.t(.otherSessionsEnded)
            }
        }
        await activity.change(body, readAfterSuccess: !ownSession, read: read, show: show)
        if ownSession, notice?.isProblem == false { sessions = [] }
    }

    // MARK: Internals

    private func read() async throws -> [SignInSession] { try await state.session.sessions() }

    /// This device's session first, then the server's order (newest first).
    private func show(_ list: [SignInSession]) {
        sessions = list.filter(\.isCurrent) + list.filter { !$0.isCurrent }
        isLoaded = true
    }
}
