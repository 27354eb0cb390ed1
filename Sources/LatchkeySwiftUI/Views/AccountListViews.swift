#if canImport(SwiftUI)
import SwiftUI
import Latchkey
#if canImport(UIKit)
import UIKit
#endif

/// The account's passkeys, in the style of `UserProfile`: each with when it was last used, renaming (an alert with
/// the name), deleting after a confirmation, and adding one on this device (the system's passkey sheet; the client
/// needs a credential provider, as `LatchkeyApple` sets up).
///
/// ```swift
/// Form { PasskeysView() }
/// ```
@MainActor
public struct PasskeysView: View {
    private let onSignInRequired: (@MainActor () -> Void)?

    /// - Parameter onSignInRequired: called when the sign-in is too old for a change.
    public init(onSignInRequired: (@MainActor () -> Void)? = nil) {
        self.onSignInRequired = onSignInRequired
    }

    public var body: some View {
        AccountScreen(title: .passkeys, make: { [onSignInRequired] in PasskeysModel(state: $0, onSignInRequired: onSignInRequired) }) {
            PasskeysContent(model: $0)
        }
    }
}

@MainActor
struct PasskeysContent: View {
    @Bindable var model: PasskeysModel
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme

    var body: some View {
        VStack(alignment: .leading, spacing: theme.fieldSpacing) {
            if model.isLoaded && model.passkeys.isEmpty {
                Text(model.emptyText).font(theme.bodyFont).foregroundStyle(theme.secondaryText)
            }
            ForEach(model.passkeys) { passkey in
                AccountRow(title: passkey.friendlyName, detail: model.detail(of: passkey)) {
                    Button(state.i18n.t(.rename)) { model.startRenaming(passkey) }
                        .accessibilityLabel("\(state.i18n.t(.rename)), \(passkey.friendlyName)")
                        .accessibilityIdentifier(LatchkeyAccessibilityID.renamePasskey(passkey.id))
                    Button(state.i18n.t(.delete), role: .destructive) { model.askToDelete(passkey) }
                        .accessibilityLabel("\(state.i18n.t(.delete)), \(passkey.friendlyName)")
                        .accessibilityIdentifier(LatchkeyAccessibilityID.deletePasskey(passkey.id))
                }
            }
            if !model.isLoaded && model.isLoading { ProgressView().accessibilityLabel(state.i18n.t(.loading)) }
            Button(state.i18n.t(.addPasskey)) {
                Task { await model.addPasskey(friendlyName: Self.deviceName, anchor: KeyWindowPresentationContext.keyWindow()) }
            }
            .accessibilityIdentifier(LatchkeyAccessibilityID.addPasskey)
            if let notice = model.notice { AccountNoticeText(notice: notice) }
        }
        .buttonStyle(.borderless)
        .disabled(model.isLoading && model.isLoaded)
        // What the action needs comes with it (`presenting:`, the name read in the action): closing clears the model's.
        .alert(state.i18n.t(.rename), isPresented: $model.isRenaming, presenting: model.renaming) { passkey in
            TextField(state.i18n.t(.passkeyName), text: $model.newName)
                .accessibilityIdentifier(LatchkeyAccessibilityID.passkeyName)
            Button(state.i18n.t(.save)) {
                let name = model.newName
                Task { await model.rename(passkey, to: name) }
            }
            .disabled(!model.canSaveName)
            Button(state.i18n.t(.cancel), role: .cancel) { model.cancelRenaming() }
        }
        .confirmationDialog(
            model.deletionTitle, isPresented: $model.isConfirmingDeletion, titleVisibility: .visible, presenting: model.deletion
        ) { passkey in
            Button(state.i18n.t(.delete), role: .destructive) { Task { await model.delete(passkey) } }
                .accessibilityIdentifier(LatchkeyAccessibilityID.confirm)
            Button(state.i18n.t(.cancel), role: .cancel) {}
        } message: { _ in
            Text(model.deletionWarning)
        }
    }

    /// The new passkey's name: the kind of device it was made on ("iPhone", "iPad", "Mac").
    static var deviceName: String {
        #if canImport(UIKit) && !os(watchOS)
        UIDevice.current.model
        #else
        "Mac"
        #endif
    }
}

/// Where the person is signed in, in the style of `UserProfile`: each session with its apps and when it began, this
/// device's marked, signing out of one after a confirmation (a lost phone's), and signing out everywhere else.
///
/// ```swift
/// Form { SessionsView() }
/// ```
@MainActor
public struct SessionsView: View {
    /// A list of the signed-in person's sessions.
    public init() {}

    public var body: some View {
        AccountScreen(title: .sessions, make: { SessionsModel(state: $0) }) { SessionsContent(model: $0) }
    }
}

@MainActor
struct SessionsContent: View {
    @Bindable var model: SessionsModel
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme

    var body: some View {
        VStack(alignment: .leading, spacing: theme.fieldSpacing) {
            ForEach(model.sessions) { session in
                AccountRow(title: model.name(of: session), detail: model.detail(of: session), badge: session.isCurrent ? model.thisDeviceLabel : nil)
                {
                    Button(state.i18n.t(.signOut), role: .destructive) { model.askToEnd(session) }
                        .accessibilityLabel("\(state.i18n.t(.signOut)), \(model.name(of: session))")
                        .accessibilityIdentifier(LatchkeyAccessibilityID.endSession(session.id))
                }
            }
            if !model.isLoaded && model.isLoading { ProgressView().accessibilityLabel(state.i18n.t(.loading)) }
            if model.hasOtherSessions {
                Button(state.i18n.t(.signOutOtherSessions), role: .destructive) { model.askToEndOthers() }
                    .accessibilityIdentifier(LatchkeyAccessibilityID.signOutOtherSessions)
            }
            if let notice = model.notice { AccountNoticeText(notice: notice) }
        }
        .buttonStyle(.borderless)
        .disabled(model.isLoading && model.isLoaded)
        .confirmationDialog(
            model.endingTitle, isPresented: $model.isConfirmingEnding, titleVisibility: .visible, presenting: model.ending
        ) { ending in
            Button(state.i18n.t(.signOut), role: .destructive) { Task { await model.end(ending) } }
                .accessibilityIdentifier(LatchkeyAccessibilityID.confirm)
            Button(state.i18n.t(.cancel), role: .cancel) {}
        } message: { _ in
            Text(model.endingWarning)
        }
    }
}

/// The identity providers linked to the account, in the style of `UserProfile`: each with when it was linked,
/// unlinking after a confirmation, and a "Link …" button for each provider the application offers (the provider's
/// page is shown from the app's key window).
///
/// ```swift
/// Form { LinkedAccountsView(onSignInRequired: { showSignIn(prompt: "login") }) }
/// ```
@MainActor
public struct LinkedAccountsView: View {
    private let onSignInRequired: (@MainActor () -> Void)?

    /// - Parameter onSignInRequired: called when the sign-in is too old for a change.
    public init(onSignInRequired: (@MainActor () -> Void)? = nil) {
        self.onSignInRequired = onSignInRequired
    }

    public var body: some View {
        AccountScreen(
            title: .linkedAccounts,
            make: { [onSignInRequired] state in
                let model = LinkedAccountsModel(state: state, onSignInRequired: onSignInRequired)
                model.presentationContextProvider = KeyWindowPresentationContext.shared
                return model
            }
        ) { LinkedAccountsContent(model: $0) }
    }
}

@MainActor
struct LinkedAccountsContent: View {
    @Bindable var model: LinkedAccountsModel
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme

    var body: some View {
        VStack(alignment: .leading, spacing: theme.fieldSpacing) {
            if let linked = model.linked {
                if linked.identities.isEmpty { Text(model.emptyText).font(theme.bodyFont).foregroundStyle(theme.secondaryText) }
                ForEach(linked.identities) { identity in
                    AccountRow(title: model.name(of: identity), detail: model.detail(of: identity)) {
                        Button(state.i18n.t(.unlink), role: .destructive) { model.askToUnlink(identity) }
                            .accessibilityLabel("\(state.i18n.t(.unlink)), \(model.name(of: identity))")
                            .accessibilityIdentifier(LatchkeyAccessibilityID.unlinkProvider(identity.provider))
                    }
                }
                ForEach(model.linkable) { provider in
                    Button(model.linkLabel(provider)) { Task { await model.link(provider) } }
                        .accessibilityIdentifier(LatchkeyAccessibilityID.linkProvider(provider.provider))
                }
            } else if model.isLoading {
                ProgressView().accessibilityLabel(state.i18n.t(.loading))
            }
            if let notice = model.notice { AccountNoticeText(notice: notice) }
        }
        .buttonStyle(.borderless)
        .disabled(model.isLoading && model.linked != nil)
        .confirmationDialog(
            model.unlinkingTitle, isPresented: $model.isConfirmingUnlink, titleVisibility: .visible, presenting: model.unlinking
        ) { identity in
            Button(state.i18n.t(.unlink), role: .destructive) { Task { await model.unlink(identity) } }
                .accessibilityIdentifier(LatchkeyAccessibilityID.confirm)
            Button(state.i18n.t(.cancel), role: .cancel) {}
        } message: { _ in
            Text(model.unlinkingWarning)
        }
    }
}
#endif
