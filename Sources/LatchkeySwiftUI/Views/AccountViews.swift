#if canImport(SwiftUI)
import SwiftUI
import Latchkey

/// Deletes the signed-in person's account from inside the app (App Store Review Guideline 5.1.1(v)): a destructive
/// button whose tap shows a confirmation naming what is lost; only the confirmation deletes. The outcome shows under
/// the button in the person's language ("Your account was deleted." or the day a grace period ends), and the state is
/// signed out. A sign-in too old for it asks the person to sign in again (`onSignInRequired`).
///
/// ```swift
/// Section { DeleteAccountButton(onDeleted: { _ in path.removeAll() }) }
/// ```
@MainActor
public struct DeleteAccountButton: View {
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme
    @State private var model: DeleteAccountModel?
    private let onDeleted: (@MainActor (AccountDeletion) -> Void)?
    private let onSignInRequired: (@MainActor () -> Void)?

    /// - Parameters:
    ///   - onDeleted: called once the server confirmed, with the state already signed out.
    ///   - onSignInRequired: called when the sign-in is too old; present a sign-in with `prompt=login`, then the
    ///     person taps again.
    public init(onDeleted: (@MainActor (AccountDeletion) -> Void)? = nil, onSignInRequired: (@MainActor () -> Void)? = nil) {
        self.onDeleted = onDeleted
        self.onSignInRequired = onSignInRequired
    }

    public var body: some View {
        Group {
            if let model {
                content(model)
            } else {
                Text(state.i18n.t(.deleteAccount)).hidden()  // holds the place until the model exists
            }
        }
        .onAppear {
            guard model == nil else { return }
            model = DeleteAccountModel(state: state, onDeleted: onDeleted, onSignInRequired: onSignInRequired)
        }
    }

    private func content(_ model: DeleteAccountModel) -> some View {
        VStack(alignment: .leading, spacing: theme.fieldSpacing) {
            Button(role: .destructive) {
                model.tap()
            } label: {
                HStack(spacing: 8) {
                    if model.phase == .deleting { ProgressView() }
                    Text(model.label)
                }
            }
            .font(theme.bodyFont)
            .disabled(model.isDisabled)
            .accessibilityIdentifier(LatchkeyAccessibilityID.deleteAccount)
            .confirmationDialog(
                model.confirmationTitle, isPresented: Binding(get: { model.isConfirming }, set: { model.isConfirming = $0 }),
                titleVisibility: .visible
            ) {
                Button(model.confirmLabel, role: .destructive) { model.confirmFromDialog() }
                    .accessibilityIdentifier(LatchkeyAccessibilityID.deleteAccountConfirm)
                Button(model.cancelLabel, role: .cancel) { model.cancel() }
            } message: {
                Text(model.warning)
            }
            if let message = model.message {
                Text(message)
                    .font(theme.captionFont)
                    .foregroundStyle(model.phase == .failed ? theme.error : theme.secondaryText)
                    .accessibilityIdentifier(LatchkeyAccessibilityID.deleteAccountMessage)
            }
        }
    }
}
#endif
