import Foundation
import Latchkey
import Observation

/// The identity providers linked to the account (`LinkedAccountsView`): the linked ones with when, linking one the
/// application offers (the provider's page in the client's user agent), and unlinking one after a confirmation.
///
/// Linking and unlinking need a recent sign-in: when the server says it is too old, ``notice`` asks the person to sign
/// in again and `onSignInRequired` is called. Closing the provider's page says nothing.
@MainActor @Observable
public final class LinkedAccountsModel {
    /// The linked providers and those offered, as last loaded; nil before the first load.
    public private(set) var linked: LinkedIdentities?
    /// True while a call is under way.
    public var isLoading: Bool { activity.isLoading }
    /// The last change's outcome or failure, in the person's words.
    public var notice: AccountNotice? { activity.notice }
    /// The provider the person asked to unlink, while the confirmation is shown.
    public private(set) var unlinking: LinkedIdentity?

    /// Called when the sign-in is too old for a change, so the app can present its sign-in (with `prompt=login`).
    public var onSignInRequired: (@MainActor () -> Void)? {
        get { activity.onSignInRequired }
        set { activity.onSignInRequired = newValue }
    }
    /// What a provider's page is presented from (the view sets the app's key window).
    @ObservationIgnored public weak var presentationContextProvider: (any PresentationContextProviding)?
    private let activity: AccountActivity
    private var state: LatchkeyState { activity.state }

    /// A screen over `state`'s session.
    public init(state: LatchkeyState, onSignInRequired: (@MainActor () -> Void)? = nil) {
        activity = AccountActivity(state: state, onSignInRequired: onSignInRequired)
    }

    // MARK: What the screen shows

    /// The section's title.
    public var title: String { state.i18n.t(.linkedAccounts) }
    /// The text when nothing is linked.
    public var emptyText: String { state.i18n.t(.noLinkedAccounts) }
    /// The providers offered that are not linked yet, in the server's order.
    public var linkable: [ProviderConfig] {
        guard let linked else { return [] }
        let done = Set(linked.identities.map(\.provider))
        return linked.available.filter { !done.contains($0.provider) }
    }
    /// A linked provider's name ("Corp SSO"), its id when the server gave none.
    public func name(of identity: LinkedIdentity) -> String {
        identity.name ?? linked?.available.first { $0.provider == identity.provider }?.name ?? identity.provider
    }
    /// The line under a linked provider: when it was linked.
    public func detail(of identity: LinkedIdentity) -> String? {
        identity.linkedAt.map { state.text(.linkedOn, ["date": state.day($0)]) }
    }
    /// The link button's label ("Link Corp SSO").
    public func linkLabel(_ provider: ProviderConfig) -> String {
        state.text(.linkProvider, ["provider": provider.name ?? provider.provider])
    }
    /// The confirmation's title ("Unlink Corp SSO?").
    public var unlinkingTitle: String { state.text(.unlinkTitle, ["provider": unlinking.map(name(of:)) ?? ""]) }
    /// The confirmation's text.
    public var unlinkingWarning: String { state.text(.unlinkWarning, ["provider": unlinking.map(name(of:)) ?? ""]) }

    /// Whether the confirmation is shown (a binding).
    public var isConfirmingUnlink: Bool {
        get { unlinking != nil }
        set { if !newValue { unlinking = nil } }
    }

    // MARK: What the person does

    /// Loads the linked providers (the view calls it when it appears).
    public func load() async {
        if state.isPreview { linked = linked ?? .preview; return }
        await activity.load(read, show: show)
    }

    /// Links `provider`: the person signs in at the provider's page, then it is linked.
    public func link(_ provider: ProviderConfig) async {
        // The provider is only asked for its anchor by the system, on the main thread (as `SignOutButtonModel` passes it).
        nonisolated(unsafe) let presentation = presentationContextProvider
        await change { [state] in
            let identity = try await state.session.linkIdentity(provider: provider.provider, presentationContextProvider: presentation)
            return state.text(.providerLinked, ["provider": identity.name ?? provider.name ?? provider.provider])
        }
    }

    /// Asks to unlink `identity`: shows the confirmation.
    public func askToUnlink(_ identity: LinkedIdentity) {
        guard !isLoading else { return }
        unlinking = identity
    }

    /// Unlinks `identity` (the confirmation's action: SwiftUI closes the dialog, clearing ``unlinking``, before the
    /// action's task runs, so the provider is passed in).
    public func unlink(_ identity: LinkedIdentity) async {
        guard !isLoading else { return }
        let name = name(of: identity)
        unlinking = nil
        await change { [state] in
            try await state.session.unlinkIdentity(provider: identity.provider)
            return state.text(.providerUnlinked, ["provider": name])
        }
    }

    // MARK: Internals

    private func change(_ body: () async throws -> String?) async {
        await activity.change(body, read: read, show: show)
    }

    private func read() async throws -> LinkedIdentities { try await state.session.linkedIdentities() }
    private func show(_ loaded: LinkedIdentities) { linked = loaded }
}
