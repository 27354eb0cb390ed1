#if canImport(SwiftUI)
import SwiftUI
import Latchkey
#if canImport(UIKit)
import UIKit
#endif

/// The unstyled sign-in form builder (ThunderID's `BaseSignIn`): runs the application's sign-in flow in an
/// `AuthFlowModel` (ThunderID's `SignInState`) and hands it to `content` for each step.
@MainActor
public struct BaseSignIn<Content: View>: View {
    @Environment(LatchkeyState.self) private var state
    @State private var model: AuthFlowModel?
    private let applicationId: String?
    private let flowType: EmbeddedFlowType
    private let onComplete: (@MainActor () -> Void)?
    private let onError: (@MainActor (String) -> Void)?
    private let content: (AuthFlowModel) -> Content
    /// `SignIn(passkeyUpgrade:)`: the model's `upgradesToPasskey`.
    var passkeyUpgrade = false

    /// - Parameters:
    ///   - applicationId: the application whose flow runs (nil: the configuration's `applicationId`, else its client id).
    ///   - onComplete: called once signed in, after `LatchkeyState.user` is set.
    ///   - onError: called with each error message shown.
    ///   - content: lays out the step from the model (`inputs`, `actions`, `value(for:)`/`binding(for:)`, `submit(actionId:)`).
    public init(
        applicationId: String? = nil, onComplete: (@MainActor () -> Void)? = nil, onError: (@MainActor (String) -> Void)? = nil,
        @ViewBuilder content: @escaping (AuthFlowModel) -> Content
    ) {
        self.init(flowType: .authentication, applicationId: applicationId, onComplete: onComplete, onError: onError, content: content)
    }

    init(
        flowType: EmbeddedFlowType, applicationId: String?, onComplete: (@MainActor () -> Void)?, onError: (@MainActor (String) -> Void)?,
        content: @escaping (AuthFlowModel) -> Content
    ) {
        self.flowType = flowType
        self.applicationId = applicationId
        self.onComplete = onComplete
        self.onError = onError
        self.content = content
    }

    public var body: some View {
        Group {
            if let model {
                content(model)
            } else {
                ProgressView().accessibilityLabel(state.i18n.t(.loading))
            }
        }
        .onAppear {
            guard model == nil else { return }
            let flow = AuthFlowModel(state: state, flowType: flowType, applicationId: applicationId)
            let onComplete = onComplete
            let onError = onError
            flow.onComplete = { _ in onComplete?() }
            flow.onError = { message in onError?(message) }
            flow.upgradesToPasskey = passkeyUpgrade
            model = flow
            Task { await flow.start() }
        }
    }
}

/// The unstyled registration form builder (ThunderID's `BaseSignUp`): `BaseSignIn` over the registration flow; its
/// model is ThunderID's `SignUpState`.
@MainActor
public struct BaseSignUp<Content: View>: View {
    private let base: BaseSignIn<Content>

    /// As `BaseSignIn.init(applicationId:onComplete:onError:content:)`, for the registration flow.
    public init(
        applicationId: String? = nil, onComplete: (@MainActor () -> Void)? = nil, onError: (@MainActor (String) -> Void)? = nil,
        @ViewBuilder content: @escaping (AuthFlowModel) -> Content
    ) {
        base = BaseSignIn(flowType: .registration, applicationId: applicationId, onComplete: onComplete, onError: onError, content: content)
    }

    public var body: some View { base }
}

/// The app-native sign-in form (ThunderID's `SignIn`): every step the server sends, with its fields, errors next to
/// their fields, one spinner on the action being sent, a passkey when the flow offers one, and "start over" when a
/// flow ended.
///
/// Passkey-first: the step's username field has the `.username` content type, and while it shows, the form offers the
/// account's passkeys in the keyboard's suggestions (AutoFill, `AuthFlowModel.runPasskeyAutoFill(anchor:)` over
/// `LatchkeyClient.beginAutoFillAssistedPasskeyLogin(withRequest:)`). The sign-in is driven by the server's flow,
/// which has no AutoFill step of its own, so AutoFill runs beside it: a passkey the person taps signs in natively
/// and completes the form. It stops when the form goes away, when the step changes, and when the person picks
/// another way (the flow's passkey button, a provider's page, "start over"). `passkeyAutoFill: false` turns it off
/// (the content type stays). With `BaseSignIn` and a layout of its own, an app runs it the same way from the field's
/// `.task`.
@MainActor
public struct SignIn: View {
    private let form: BaseSignIn<FlowStepView>

    /// - Parameters:
    ///   - applicationId: the application whose flow runs.
    ///   - passkeyAutoFill: offer passkeys in the username field's keyboard suggestions while it shows (iOS and
    ///     visionOS; the client needs passkeys, as `LatchkeyClient()` of LatchkeyApple has). True by default.
    ///   - passkeyUpgrade: after a sign-in that took a password, offer a passkey for the account without asking
    ///     (`AuthFlowModel.upgradesToPasskey`: iOS 18's conditional registration, nothing elsewhere). False by default.
    ///   - onComplete: called once signed in (`LatchkeyState` already shows the user).
    ///   - onError: called with each error message shown.
    public init(
        applicationId: String? = nil, passkeyAutoFill: Bool = true, passkeyUpgrade: Bool = false, onComplete: (@MainActor () -> Void)? = nil,
        onError: (@MainActor (String) -> Void)? = nil
    ) {
        var base = BaseSignIn(flowType: .authentication, applicationId: applicationId, onComplete: onComplete, onError: onError) {
            FlowStepView(model: $0, passkeyAutoFill: passkeyAutoFill)
        }
        base.passkeyUpgrade = passkeyUpgrade
        form = base
    }

    public var body: some View { form }
}

/// The app-native registration form (ThunderID's `SignUp`); the same layout as `SignIn`.
@MainActor
public struct SignUp: View {
    private let form: BaseSignIn<FlowStepView>

    /// As `SignIn.init(applicationId:onComplete:onError:)`, for the registration flow.
    public init(applicationId: String? = nil, onComplete: (@MainActor () -> Void)? = nil, onError: (@MainActor (String) -> Void)? = nil) {
        form = BaseSignIn(flowType: .registration, applicationId: applicationId, onComplete: onComplete, onError: onError) {
            FlowStepView(model: $0, passkeyAutoFill: false)
        }
    }

    public var body: some View { form }
}

extension AuthFlowModel {
    /// A binding to the value of input `identifier` (ThunderID's `SignInState.binding(for:)`).
    public func binding(for identifier: String) -> Binding<String> {
        // Binding's closures are `@isolated(any) @Sendable`: without `@MainActor` they would be non-isolated and could
        // not call this main-actor model synchronously.
        Binding(get: { @MainActor in self.value(for: identifier) }, set: { @MainActor value in self.setValue(value, for: identifier) })
    }
}

/// The default layout of one flow step — what `SignIn` and `SignUp` show, public so a screen of the app's own can use
/// it inside `BaseSignIn` (or recompose it from `FlowInputField` and `FlowActionButton`): the heading, the step's
/// error, its notice, the fields in order (Return moves to the next one and submits on the last), the passkey or
/// identity-provider button when the step asks for one, the actions, and "start over" after a flow ended. It
/// follows `LatchkeyTheme` and sets `LatchkeyAccessibilityID`s.
@MainActor
public struct FlowStepView: View {
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme
    @FocusState private var focused: String?
    private let model: AuthFlowModel
    /// Offer passkeys in the username field's keyboard suggestions while the step shows one.
    private let passkeyAutoFill: Bool

    /// The step of `model`; `passkeyAutoFill` offers passkeys in the username field's keyboard suggestions (iOS and
    /// visionOS) while the step shows one.
    public init(model: AuthFlowModel, passkeyAutoFill: Bool = true) {
        self.model = model
        self.passkeyAutoFill = passkeyAutoFill
    }

    /// Whether AutoFill runs now: it starts when a step with a username field shows, and stops (the `.task` is
    /// cancelled) when that changes or the form goes away.
    private var runsPasskeyAutoFill: Bool {
        #if os(iOS) || os(visionOS)
        passkeyAutoFill && model.offersPasskeyAutoFill
        #else
        false  // AutoFill-assisted requests exist on iOS and visionOS only
        #endif
    }

    public var body: some View {
        VStack(alignment: .leading, spacing: theme.spacing) {
            if let title = model.title {
                Text(title).font(theme.titleFont).accessibilityAddTraits(.isHeader)
                    .accessibilityIdentifier(LatchkeyAccessibilityID.title)
            }
            if let error = model.error {
                Label(error, systemImage: "exclamationmark.triangle")
                    .font(theme.bodyFont)
                    .foregroundStyle(theme.error)
                    .accessibilityLabel(error)
                    .accessibilityIdentifier(LatchkeyAccessibilityID.error)
            }
            if let notice = model.notice {
                Text(notice).font(theme.captionFont).foregroundStyle(theme.secondaryText)
                    .accessibilityIdentifier(LatchkeyAccessibilityID.notice)
            }
            ForEach(model.visibleInputs) { input in
                FlowInputField(model: model, input: input)
                    .focused($focused, equals: input.identifier)
                    .submitLabel(model.field(after: input.identifier) == nil ? .go : .next)
                    .onSubmit { focused = model.returnPressed(in: input.identifier) }
            }
            if model.acceptsRecoveryCode && !model.isEnteringRecoveryCode {
                Button(state.i18n.t(.useRecoveryCode)) { model.useRecoveryCode() }
                    .font(theme.bodyFont)
                    .disabled(model.isLoading)
                    .accessibilityIdentifier(LatchkeyAccessibilityID.useRecoveryCode)
            }
            if model.asksForPasskey {
                Button {
                    // The sheet takes over from the keyboard's suggestions (submitPasskey stops them first).
                    Task { await model.submitPasskey() }
                } label: {
                    Label(state.i18n.t(.usePasskey), systemImage: "person.badge.key").font(theme.bodyFont)
                }
                .latchkeyPrimaryButton(theme)
                .disabled(model.isLoading)
                .accessibilityIdentifier(LatchkeyAccessibilityID.passkey)
            } else if let redirect = model.redirectURL {
                // An identity provider's page: shown at once, and again from this button if the person closed it.
                let label = state.i18n.t(.continueAction)
                Button {
                    Task { await model.followRedirection(presentationContextProvider: KeyWindowPresentationContext.shared) }
                } label: {
                    HStack(spacing: 8) {
                        if model.isLoading { ProgressView() }
                        Text(label).font(theme.bodyFont)
                    }
                    .frame(maxWidth: .infinity)
                }
                .latchkeyPrimaryButton(theme)
                .disabled(model.isLoading)
                .accessibilityLabel(label)
                .accessibilityIdentifier(LatchkeyAccessibilityID.continueRedirect)
                .task(id: redirect) {
                    await model.followRedirection(presentationContextProvider: KeyWindowPresentationContext.shared)
                }
            } else {
                ForEach(model.actions) { action in
                    FlowActionButton(model: model, action: action, isPrimary: action.ref == model.primaryAction?.ref)
                }
            }
            if model.canRestart {
                Button(state.i18n.t(.startOver)) { Task { await model.restart() } }
                    .font(theme.bodyFont)
                    .disabled(model.isLoading)
                    .accessibilityIdentifier(LatchkeyAccessibilityID.startOver)
            }
            if model.phase == .idle {
                ProgressView().accessibilityLabel(state.i18n.t(.loading))
            }
        }
        .frame(maxWidth: .infinity, alignment: .leading)
        .task(id: runsPasskeyAutoFill) {
            guard runsPasskeyAutoFill else { return }
            await model.runPasskeyAutoFill { KeyWindowPresentationContext.keyWindow() }
        }
    }
}

/// One input of a step, public for screens of the app's own: a picker for SELECT inputs, a secure field for
/// passwords (`.newPassword` on registration and recovery, so the keyboard offers a strong one), a text field
/// otherwise (`.username`, `.oneTimeCode`, `.emailAddress`, `.telephoneNumber` as the input is), its error right
/// under it. Focus and Return are the caller's (`FlowStepView` moves through the fields with
/// `AuthFlowModel.returnPressed(in:)`).
@MainActor
public struct FlowInputField: View {
    @Environment(\.latchkeyTheme) private var theme
    private let model: AuthFlowModel
    private let input: FlowInput

    /// The field for `input` of `model`'s step.
    public init(model: AuthFlowModel, input: FlowInput) {
        self.model = model
        self.input = input
    }

    private var label: String { input.label ?? input.identifier }

    public var body: some View {
        VStack(alignment: .leading, spacing: theme.fieldSpacing) {
            field
                .font(theme.bodyFont)
                .accessibilityIdentifier(LatchkeyAccessibilityID.input(input.identifier))
            if let error = model.fieldError(for: input.identifier) {
                Text(error).font(theme.captionFont).foregroundStyle(theme.error)
                    .accessibilityIdentifier(LatchkeyAccessibilityID.fieldError(input.identifier))
            }
        }
        .accessibilityElement(children: .combine)
        .accessibilityHint(model.fieldError(for: input.identifier) ?? "")
    }

    @ViewBuilder private var field: some View {
        let text = model.binding(for: input.identifier)
        if input.isSelect {
            Picker(label, selection: text) {
                ForEach(input.options, id: \.self) { Text($0).tag($0) }
            }
            .accessibilityLabel(label)
        } else if input.type == "PASSWORD_INPUT" {
            SecureField(label, text: text)
                .textFieldStyle(.roundedBorder)
                .accessibilityLabel(label)
                #if os(iOS) || os(visionOS)
            .textContentType(model.flowType == .authentication ? .password : .newPassword)
                #endif
        } else {
            TextField(label, text: text)
                .textFieldStyle(.roundedBorder)
                .autocorrectionDisabled()
                .accessibilityLabel(label)
                #if os(iOS) || os(visionOS)
            .textInputAutocapitalization(input.type == "OTP_INPUT" && !model.codeIsNumeric ? .characters : .never)
            .textContentType(contentType)
            .keyboardType(keyboard)
                #endif
        }
    }

    #if os(iOS) || os(visionOS)
    private var contentType: UITextContentType? {
        // The account's name: `.username` is what makes the keyboard offer saved passwords and AutoFill's passkeys.
        if model.isUsernameField(input) { return .username }
        return switch input.type {
        case "OTP_INPUT": .oneTimeCode
        case "EMAIL_INPUT": .emailAddress
        case "PHONE_INPUT": .telephoneNumber
        default: nil
        }
    }

    private var keyboard: UIKeyboardType {
        switch input.type {
        case "OTP_INPUT": model.codeIsNumeric ? .numberPad : .asciiCapable
        case "EMAIL_INPUT": .emailAddress
        case "PHONE_INPUT": .phonePad
        default: .default
        }
    }
    #endif
}

/// One action of a step, public for screens of the app's own: its label (the server's, else "Continue" in the
/// person's language), its own spinner while it is being sent, prominent when it is the step's primary action.
@MainActor
public struct FlowActionButton: View {
    @Environment(LatchkeyState.self) private var state
    @Environment(\.latchkeyTheme) private var theme
    private let model: AuthFlowModel
    private let action: FlowAction
    private let isPrimary: Bool

    /// The button for `action` of `model`'s step; `isPrimary` makes it the prominent, full-width one.
    public init(model: AuthFlowModel, action: FlowAction, isPrimary: Bool) {
        self.model = model
        self.action = action
        self.isPrimary = isPrimary
    }

    public var body: some View {
        let label = action.label ?? state.i18n.t(.continueAction)
        let button = Button {
            model.submit(actionId: action.ref)
        } label: {
            HStack(spacing: 8) {
                if model.isLoading(actionId: action.ref) { ProgressView() }
                Text(label).font(theme.bodyFont)
            }
            .frame(maxWidth: isPrimary ? .infinity : nil)
        }
        .buttonBorderShape(.roundedRectangle(radius: theme.cornerRadius))
        .disabled(model.isLoading)
        .accessibilityLabel(label)
        .accessibilityIdentifier(LatchkeyAccessibilityID.action(action.ref))
        if isPrimary {
            button.buttonStyle(.borderedProminent).latchkeyAccent(theme)
        } else {
            button.buttonStyle(.bordered).latchkeyAccent(theme)
        }
    }
}
#endif
