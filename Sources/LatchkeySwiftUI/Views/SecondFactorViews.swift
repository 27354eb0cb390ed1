#if canImport(SwiftUI)
import SwiftUI
import Latchkey

/// The person's own second factors, in the style of `UserProfile`: the list (with the recovery codes counted), adding
/// an authenticator app (a sheet with its QR code, the setup key and the first code), turning on codes by email,
/// creating recovery codes (shown once in a sheet, to save or share), and removing a factor after a confirmation.
/// Put it in a `Form`, a `List` row or a `ScrollView`.
///
/// ```swift
/// Form { SecondFactorsView(onSignInRequired: { showSignIn(prompt: "login") }) }
/// ```
@MainActor
public struct SecondFactorsView: View {
    private let onSignInRequired: (@MainActor () -> Void)?

    /// - Parameter onSignInRequired: called when the sign-in is too old for a change; present a sign-in with
    ///   `prompt=login`, then the person tries again.
    public init(onSignInRequired: (@MainActor () -> Void)? = nil) {
        self.onSignInRequired = onSignInRequired
    }

    public var body: some View {
        AccountScreen(title: .secondFactors, make: { [onSignInRequired] in SecondFactorsModel(state: $0, onSignInRequired: onSignInRequired) }) {
            SecondFactorsContent(model: $0)
        }
    }
}

/// The factors' rows, buttons, confirmation and sheets over a model.
@MainActor
struct SecondFactorsContent: View {
    @Bindable var model: SecondFactorsModel
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme

    var body: some View {
        VStack(alignment: .leading, spacing: theme.fieldSpacing) {
            if let factors = model.factors {
                if factors.factors.isEmpty { Text(model.emptyText).font(theme.bodyFont).foregroundStyle(theme.secondaryText) }
                ForEach(factors.factors, id: \.kind) { factor in
                    AccountRow(title: model.name(of: factor.kind), detail: model.detail(of: factor), isWarning: !factor.isUsable) {
                        Button(state.i18n.t(.remove), role: .destructive) { model.askToRemove(factor.kind) }
                            .disabled(!model.canRemove(factor.kind) || model.isLoading)
                            .accessibilityLabel("\(state.i18n.t(.remove)), \(model.name(of: factor.kind))")
                            .accessibilityIdentifier(LatchkeyAccessibilityID.removeSecondFactor(factor.kind.rawValue))
                    }
                    if let hint = model.removalHint(factor.kind) {
                        Text(hint).font(theme.captionFont).foregroundStyle(theme.secondaryText)
                    }
                }
                if let summary = model.recoveryCodesSummary {
                    AccountRow(title: state.i18n.t(.recoveryCodes), detail: summary, isWarning: model.recoveryCodesAreLow) { EmptyView() }
                    if model.recoveryCodesAreLow {
                        Text(state.i18n.t(.recoveryCodesLow)).font(theme.captionFont).foregroundStyle(theme.error)
                    }
                }
                if model.canAddAuthenticatorApp {
                    Button(state.i18n.t(.addAuthenticatorApp)) { Task { await model.startAuthenticatorApp() } }
                        .accessibilityIdentifier(LatchkeyAccessibilityID.addAuthenticatorApp)
                }
                if model.canTurnOnEmailCodes {
                    Button(state.i18n.t(.turnOnEmailCodes)) { Task { await model.turnOnEmailCodes() } }
                        .accessibilityIdentifier(LatchkeyAccessibilityID.turnOnEmailCodes)
                }
                if model.canCreateRecoveryCodes {
                    Button(model.createRecoveryCodesLabel) { Task { await model.requestRecoveryCodes() } }
                        .accessibilityIdentifier(LatchkeyAccessibilityID.createRecoveryCodes)
                }
            } else if model.isLoading {
                ProgressView().accessibilityLabel(state.i18n.t(.loading))
            }
            if let notice = model.notice { AccountNoticeText(notice: notice) }
        }
        .font(theme.bodyFont)
        .buttonStyle(.borderless)  // in a Form row, each button takes its own taps
        .disabled(model.isLoading && model.factors != nil)
        // The factor comes with the action (`presenting:`): the dialog clears `removal` as it closes.
        .confirmationDialog(
            model.removalTitle, isPresented: $model.isConfirmingRemoval, titleVisibility: .visible, presenting: model.removal
        ) { kind in
            Button(state.i18n.t(.remove), role: .destructive) { Task { await model.remove(kind) } }
                .accessibilityIdentifier(LatchkeyAccessibilityID.confirm)
            Button(state.i18n.t(.cancel), role: .cancel) { model.cancelRemoval() }
        } message: { _ in
            Text(model.removalWarning)
        }
        .confirmationDialog(model.replacementTitle, isPresented: $model.isConfirmingReplacement, titleVisibility: .visible) {
            Button(state.i18n.t(.create), role: .destructive) { Task { await model.createRecoveryCodes() } }
                .accessibilityIdentifier(LatchkeyAccessibilityID.confirm)
            Button(state.i18n.t(.cancel), role: .cancel) {}
        } message: {
            Text(model.replacementWarning)
        }
        .sheet(isPresented: $model.isAddingAuthenticatorApp) {
            AuthenticatorAppSetup(model: model).environment(state).latchkeyTheme(theme)
        }
        .sheet(isPresented: $model.isShowingRecoveryCodes) {
            RecoveryCodesSheet(model: model).environment(state).latchkeyTheme(theme)
        }
    }
}

/// Adding an authenticator app: the QR code (drawn with Core Image where available, the link otherwise), the setup
/// key to type by hand, and the app's first code.
@MainActor
struct AuthenticatorAppSetup: View {
    @Bindable var model: SecondFactorsModel
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme
    @Environment(\.scenePhase) private var scenePhase
    @FocusState private var codeFocused: Bool

    var body: some View {
        ScrollView {
            VStack(alignment: .leading, spacing: theme.spacing) {
                Text(state.i18n.t(.addAuthenticatorApp)).font(theme.titleFont).accessibilityAddTraits(.isHeader)
                Text(state.i18n.t(.scanQRCode)).font(theme.bodyFont).foregroundStyle(theme.secondaryText)
                if let setup = model.authenticatorSetup {
                    // The key is hidden from the app switcher's snapshot.
                    Group {
                        QRCodeImage(text: setup.uri.absoluteString, label: state.i18n.t(.qrCode))
                            .frame(maxWidth: 240, maxHeight: 240)
                            .frame(maxWidth: .infinity)
                        #if !os(tvOS)
                        Link(state.i18n.t(.openAuthenticatorApp), destination: setup.uri).font(theme.bodyFont)
                        #endif
                        VStack(alignment: .leading, spacing: 4) {
                            Text(state.i18n.t(.setupKey)).font(theme.captionFont).foregroundStyle(theme.secondaryText)
                            Text(model.setupKey ?? "").font(.system(.body, design: .monospaced))
                                .speechSpellsOutCharacters()
                                .accessibilityIdentifier(LatchkeyAccessibilityID.setupKey)
                                #if !os(tvOS)
                            .textSelection(.enabled)
                                #endif
                        }
                    }
                    .opacity(scenePhase == .active ? 1 : 0)
                }
                TextField(state.i18n.t(.authenticatorCode), text: $model.code)
                    .textFieldStyle(.roundedBorder)
                    .font(theme.bodyFont)
                    .focused($codeFocused)
                    .submitLabel(.done)
                    .onSubmit { Task { await model.confirmAuthenticatorApp() } }
                    .accessibilityLabel(state.i18n.t(.authenticatorCode))
                    .accessibilityIdentifier(LatchkeyAccessibilityID.authenticatorCode)
                    #if os(iOS) || os(visionOS)
                .textContentType(.oneTimeCode)
                .keyboardType(.numberPad)
                    #endif
                if let notice = model.notice, notice.isProblem { AccountNoticeText(notice: notice) }
                Button {
                    Task { await model.confirmAuthenticatorApp() }
                } label: {
                    HStack(spacing: 8) {
                        if model.isLoading { ProgressView() }
                        Text(state.i18n.t(.verify))
                    }
                    .frame(maxWidth: .infinity)
                }
                .latchkeyPrimaryButton(theme)
                .disabled(!model.canVerifyCode || model.isLoading)
                .accessibilityIdentifier(LatchkeyAccessibilityID.verifyAuthenticatorApp)
                Button(state.i18n.t(.cancel), role: .cancel) { model.cancelAuthenticatorApp() }
                    .frame(maxWidth: .infinity)
            }
            .padding(theme.spacing)
        }
        .onAppear { codeFocused = true }
        .task(id: model.authenticatorSetup?.enrollment) {
            // The server refuses the first code after `expiresAt`: close the setup then rather than keep the key.
            guard let expiresAt = model.authenticatorSetup?.expiresAt else { return }
            try? await Task.sleep(for: .seconds(max(0, expiresAt.timeIntervalSinceNow)))
            if !Task.isCancelled { model.cancelAuthenticatorApp() }
        }
    }
}

/// A new set of recovery codes, shown once: to write down, copy or share to a password manager.
@MainActor
struct RecoveryCodesSheet: View {
    @Bindable var model: SecondFactorsModel
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme
    @Environment(\.scenePhase) private var scenePhase

    var body: some View {
        ScrollView {
            VStack(alignment: .leading, spacing: theme.spacing) {
                Text(state.i18n.t(.recoveryCodes)).font(theme.titleFont).accessibilityAddTraits(.isHeader)
                Text(state.i18n.t(.saveRecoveryCodes)).font(theme.bodyFont).foregroundStyle(theme.secondaryText)
                if let text = model.recoveryCodesText {
                    Text(text)
                        .font(.system(.title3, design: .monospaced))
                        .frame(maxWidth: .infinity)
                        .speechSpellsOutCharacters()
                        .opacity(scenePhase == .active ? 1 : 0)  // hidden from the app switcher's snapshot
                        .accessibilityIdentifier(LatchkeyAccessibilityID.recoveryCodes)
                        #if !os(tvOS)
                    .textSelection(.enabled)
                        #endif
                    #if os(iOS) || os(macOS) || os(visionOS)
                    ShareLink(item: text).frame(maxWidth: .infinity)
                    #endif
                }
                Button {
                    model.dismissRecoveryCodes()
                } label: {
                    Text(state.i18n.t(.done)).frame(maxWidth: .infinity)
                }
                .latchkeyPrimaryButton(theme)
            }
            .padding(theme.spacing)
        }
    }
}
#endif
