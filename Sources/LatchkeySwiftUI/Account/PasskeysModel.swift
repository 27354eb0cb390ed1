import Foundation
import Latchkey
import Observation

/// The account's passkeys (`PasskeysView`): the list with when each was added and last used, adding one on this
/// device, renaming one, and deleting one after a confirmation.
///
/// The SDK's passkey calls take the session as ReachFive's `AuthToken`: the model asks the client for it
/// (`LatchkeySession.authToken()`, refreshed first when due) before each call.
@MainActor @Observable
public final class PasskeysModel {
    /// The passkeys as last loaded, oldest first; empty before the first load.
    public private(set) var passkeys: [DeviceCredential] = []
    /// True once a load succeeded.
    public private(set) var isLoaded = false
    /// True while a call is under way.
    public var isLoading: Bool { activity.isLoading }
    /// The last change's outcome or failure, in the person's words.
    public var notice: AccountNotice? { activity.notice }
    /// The passkey being renamed, while the name field is shown.
    public private(set) var renaming: DeviceCredential?
    /// The new name being typed.
    public var newName = ""
    /// The passkey the person asked to delete, while the confirmation is shown.
    public private(set) var deletion: DeviceCredential?

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
    public var title: String { state.i18n.t(.passkeys) }
    /// The text when the account has no passkey.
    public var emptyText: String { state.i18n.t(.noPasskeys) }
    /// The line under a passkey: when it was last used, else when it was added.
    public func detail(of passkey: DeviceCredential) -> String? {
        if let used = passkey.lastUsedDate { return state.text(.lastUsedOn, ["date": state.day(used)]) }
        return passkey.createdDate.map { state.text(.addedOn, ["date": state.day($0)]) }
    }
    /// The deletion confirmation's title ("Delete “Work phone”?").
    public var deletionTitle: String { state.text(.deletePasskeyTitle, ["name": deletion?.friendlyName ?? ""]) }
    /// The deletion confirmation's text.
    public var deletionWarning: String { state.i18n.t(.deletePasskeyWarning) }
    /// True when the typed name can be saved: not empty, at most 100 characters (the server's limit), and different.
    public var canSaveName: Bool { Self.isNewName(newName, for: renaming) }

    /// Whether the rename field is shown (a binding; closing it cancels).
    public var isRenaming: Bool {
        get { renaming != nil }
        set { if !newValue { cancelRenaming() } }
    }
    /// Whether the deletion's confirmation is shown (a binding).
    public var isConfirmingDeletion: Bool {
        get { deletion != nil }
        set { if !newValue { deletion = nil } }
    }

    // MARK: What the person does

    /// Loads the passkeys (the view calls it when it appears).
    public func load() async {
        if state.isPreview { passkeys = isLoaded ? passkeys : DeviceCredential.previews; isLoaded = true; return }
        await activity.load(read, show: show)
    }

    /// Creates a passkey on this device for the account (the system's sheet asks the person) and names it
    /// `friendlyName`. Closing the sheet says nothing.
    public func addPasskey(friendlyName: String, anchor: PresentationAnchor? = nil) async {
        await change { [state] in
            let token = try await state.session.authToken()
            try await state.client.registerNewPasskey(withRequest: NewPasskeyRequest(anchor: anchor, friendlyName: friendlyName), authToken: token)
            return state.i18n.t(.passkeyAdded)
        }
    }

    /// Shows the name field for `passkey`, filled with its name.
    public func startRenaming(_ passkey: DeviceCredential) {
        guard !isLoading else { return }
        renaming = passkey
        newName = passkey.friendlyName
    }

    /// Closes the name field; nothing is renamed.
    public func cancelRenaming() {
        renaming = nil
        newName = ""
    }

    /// Renames `passkey` to `name` (the rename alert's action: SwiftUI closes the alert, clearing ``renaming`` and
    /// ``newName``, before the action's task runs, so both are passed in). Does nothing for a name ``canSaveName``
    /// would refuse.
    public func rename(_ passkey: DeviceCredential, to name: String) async {
        guard !isLoading, Self.isNewName(name, for: passkey) else { return }
        let name = name.trimmingCharacters(in: .whitespacesAndNewlines)
        cancelRenaming()
        await change { [state] in
            let token = try await state.session.authToken()
            try await state.client.renameWebAuthnRegistration(id: passkey.id, friendlyName: name, authToken: token)
            return state.i18n.t(.passkeyRenamed)
        }
    }

    /// Asks to delete `passkey`: shows the confirmation.
    public func askToDelete(_ passkey: DeviceCredential) {
        guard !isLoading else { return }
        deletion = passkey
    }

    /// Deletes `passkey` (the confirmation's action: SwiftUI closes the dialog, clearing ``deletion``, before the
    /// action's task runs, so the passkey is passed in).
    public func delete(_ passkey: DeviceCredential) async {
        guard !isLoading else { return }
        deletion = nil
        await change { [state] in
            let token = try await state.session.authToken()
            try await state.client.deleteWebAuthnRegistration(id: passkey.id, authToken: token)
            return state.i18n.t(.passkeyDeleted)
        }
    }

    // MARK: Internals

    private func change(_ body: () async throws -> String?) async {
        await activity.change(body, read: read, show: show)
    }

    private func read() async throws -> [DeviceCredential] {
        try await state.client.listWebAuthnCredentials(authToken: try await state.session.authToken())
    }

    private func show(_ loaded: [DeviceCredential]) {
        passkeys = loaded
        isLoaded = true
    }

    static func isNewName(_ name: String, for passkey: DeviceCredential?) -> Bool {
        let name = name.trimmingCharacters(in: .whitespacesAndNewlines)
        return !name.isEmpty && name.count <= 100 && name != passkey?.friendlyName
    }

}
