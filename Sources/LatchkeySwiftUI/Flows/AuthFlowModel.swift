import Foundation
import Latchkey
import Observation

/// One app-native flow — sign-in, sign-up or recovery — as a screen shows it (ThunderID's `SignInState` /
/// `SignUpState`): the step's inputs with their values and errors, its actions, which action is running, and the
/// alternatives the flow offers (a passkey, a browser redirect).
///
/// It runs on the SDK's `FlowRunner`, which checks inputs against the step's own rules before sending, refuses a
/// second submission while one is in flight, keeps the step when the server is unreachable (submitting again
/// retries) and when a stale challenge is refused. On top, this model:
/// - keeps what the user typed across a re-prompt (a wrong password clears only the secret fields), and shows every
///   field error next to its field (never loses them, unlike ThunderID's form);
/// - never gets stuck after an error: an expired execution starts a new flow by itself, keeping the typed values
///   and saying so; any other ended flow offers `restart()`;
/// - updates `LatchkeyState` before `onComplete` runs;
/// - shows its own texts, and the server's, in the language of `LatchkeyI18n`, switching mid-flow.
///
/// The same model drives the SwiftUI `SignIn`/`SignUp` views and the terminal prompts of `latchkey login --native`,
/// `signup` and `recover`.
@MainActor @Observable
public final class AuthFlowModel {
    /// Where the flow stands.
    public enum Phase: Equatable, Sendable {
        /// Not started (`start()` begins).
        case idle
        /// Waiting for the user's input on `step`.
        case step
        /// Done: signed in (sign-in, sign-up) or the recovery finished.
        case completed
        /// The flow ended with an error: `error` says why, `restart()` begins again.
        case failed
    }

    /// Which flow this is.
    public let flowType: EmbeddedFlowType
    /// The application whose flow runs (nil: the configuration's).
    public let applicationId: String?
    /// Where the flow stands.
    public private(set) var phase: Phase = .idle
    /// The step on screen, as the server sent it (nil before the first answer).
    public private(set) var step: EmbeddedFlowResponse? {
        didSet { if !acceptsRecoveryCode { isEnteringRecoveryCode = false } }
    }
    /// True after ``useRecoveryCode()``, while the step takes recovery codes: the code field takes letters.
    public private(set) var isEnteringRecoveryCode = false
    /// The values typed so far, by input identifier.
    public private(set) var values: [String: String] = [:]
    /// Field errors by input identifier: the server's and the client-side checks'.
    public private(set) var fieldErrors: [String: String] = [:]
    /// The step's or the flow's error, in the user's language; nil when there is none.
    public private(set) var error: String?
    /// The code behind `error`.
    public private(set) var errorCode: LatchkeyError.Code?
    /// Information for the user that is not an error ("we sent you a code").
    public private(set) var notice: String?
    /// The action being sent; nil when idle. Only one runs at a time.
    public private(set) var loadingActionId: String?
    /// True while a step (or the start) is being sent.
    public private(set) var isLoading = false
    /// The signed-in user after a completed sign-in or sign-up.
    public private(set) var user: User?
    /// After a sign-in flow that took a password, offer a passkey for the account without asking
    /// (`LatchkeyClient.upgradeToPasskey(authToken:friendlyName:throwsIfUnsupported:)`: iOS 18's conditional
    /// registration; nothing happens, and nothing is asked of the server, on an OS without it). Off by default; set it
    /// before the flow completes (the SwiftUI `SignIn(passkeyUpgrade: true)` does).
    @ObservationIgnored public var upgradesToPasskey = false
    /// What the passkey upgrade came to (nil while none ran): `.registered`, or `.notOffered` with the reason.
    public private(set) var passkeyUpgrade: PasskeyUpgradeOutcome?
    /// The upgrade's failure, for the developer (a `.passkeyDomainNotAssociated` set-up mistake, a refused
    /// registration). Never shown to the person: the sign-in stands whatever the upgrade does.
    public private(set) var passkeyUpgradeError: LatchkeyError?

    /// Called once when the flow completes, after `LatchkeyState` has the user.
    @ObservationIgnored public var onComplete: (@MainActor (User?) -> Void)?
    /// Called with the message of each error shown.
    @ObservationIgnored public var onError: (@MainActor (String) -> Void)?
    /// What an identity provider's page is presented from when ``followRedirection(presentationContextProvider:)``
    /// shows it without one of its own (the Apple user agent needs one; the SwiftUI `SignIn` view passes the key
    /// window's).
    @ObservationIgnored public weak var presentationContextProvider: (any PresentationContextProviding)?

    @ObservationIgnored private let client: LatchkeyClient
    @ObservationIgnored private let state: LatchkeyState?
    @ObservationIgnored private let i18n: LatchkeyI18n
    @ObservationIgnored private let runner: FlowRunner
    @ObservationIgnored private var running: Task<Void, Never>?
    @ObservationIgnored private var upgrading: Task<Void, Never>?
    /// A password was sent in this flow (the condition for `upgradesToPasskey`).
    @ObservationIgnored private var sentPassword = false
    /// Identifiers of every secret or one-time input seen in this flow.
    @ObservationIgnored private var secretKeys: Set<String> = []
    /// Passkeys from the keyboard while the sign-in step shows its username field (`runPasskeyAutoFill(anchor:)`).
    public let passkeyAutoFill: PasskeyAutoFillModel

    /// A flow of `flowType` through `state.client`; the state learns of the sign-in when it completes.
    public convenience init(state: LatchkeyState, flowType: EmbeddedFlowType = .authentication, applicationId: String? = nil) {
        self.init(client: state.client, state: state, i18n: state.i18n, flowType: flowType, applicationId: applicationId)
    }

    /// A flow through `client` alone (a terminal, a test), with texts from `i18n`.
    public convenience init(
        client: LatchkeyClient, i18n: LatchkeyI18n, flowType: EmbeddedFlowType = .authentication,
        applicationId: String? = nil
    ) {
        self.init(client: client, state: nil, i18n: i18n, flowType: flowType, applicationId: applicationId)
    }

    private init(client: LatchkeyClient, state: LatchkeyState?, i18n: LatchkeyI18n, flowType: EmbeddedFlowType, applicationId: String?) {
        self.client = client
        self.state = state
        self.i18n = i18n
        self.flowType = flowType
        self.applicationId = applicationId
        runner = FlowRunner(
            client: client, request: EmbeddedFlowRequestConfig(applicationId: applicationId, flowType: flowType),
            session: state?.session ?? client.session(), checkMessages: i18n.checkMessages)
        passkeyAutoFill = PasskeyAutoFillModel(client: client, state: state, i18n: i18n)
    }

    // MARK: What the view shows

    /// The step's inputs (ThunderID's `SignInState.inputs`).
    public var inputs: [FlowInput] { step?.inputs ?? [] }
    /// The step's actions (ThunderID's `SignInState.actions`), passkey actions included.
    public var actions: [FlowAction] { step?.actions ?? [] }
    /// The step's UI tree with labels resolved (verbose flows).
    public var components: [FlowComponent] { step?.components ?? [] }
    /// The step's heading: the first text component's label.
    public var title: String? { components.first { $0.type == "TEXT" }?.label }
    /// The action that submits the inputs (a `SUBMIT`, else the first).
    public var primaryAction: FlowAction? { actions.first { $0.type == nil || $0.type == "SUBMIT" } ?? actions.first }
    /// Other ways on from this step (resend a code, a passkey instead of a password …).
    public var secondaryActions: [FlowAction] { actions.filter { $0.ref != primaryAction?.ref } }
    /// The action that switches to a passkey, when the step offers one.
    public var passkeyAction: FlowAction? { actions.first { $0.type == "PASSKEY" } }
    /// Whether this step's code is digits only (`otpNumericOnly`, true unless the server says otherwise): a recovery
    /// code has letters too, so its field must not offer a number pad.
    public var codeIsNumeric: Bool { !isEnteringRecoveryCode && step?.additionalData["otpNumericOnly"] != "false" }
    /// Whether this second-factor step also takes one of the account's recovery codes (`recoveryCodeAccepted`: the
    /// account has unused ones); ``useRecoveryCode()`` switches the field to letters.
    public var acceptsRecoveryCode: Bool { step?.additionalData["recoveryCodeAccepted"] == "true" }
    /// True when this step asks for a passkey ceremony (`submitPasskey()` runs it and sends the result).
    public var asksForPasskey: Bool { step.map { (try? PasskeyFlowInputs.ceremony(in: $0)) != nil } ?? false }
    /// The page to open in a browser when the step is a redirection (a federated provider):
    /// ``followRedirection(presentationContextProvider:)`` shows it through the client's user agent; an app that
    /// shows it itself sends what the browser brought back with ``continueRedirect(callback:)``.
    public var redirectURL: URL? { step?.type == .redirection ? step?.redirectURL.flatMap(URL.init(string:)) : nil }
    /// The name of the identity provider a redirection step goes to ("Corp SSO"), when the server gives it.
    public var redirectionProviderName: String? { redirectURL == nil ? nil : step?.additionalData["idpName"] }
    /// The inputs the user fills in (a passkey step's are filled by the ceremony, a redirection's by the browser).
    public var visibleInputs: [FlowInput] { asksForPasskey || redirectURL != nil ? [] : inputs }
    /// Whether `input` is where the account's name is typed: the `username` input of any flow, and on a sign-in flow
    /// an email, phone number or login identifier too. The SwiftUI field gives it the `.username` content type, which
    /// is what makes the keyboard offer saved passwords and, while `runPasskeyAutoFill(anchor:)` runs, passkeys.
    public func isUsernameField(_ input: FlowInput) -> Bool {
        guard !input.isSecret, !input.isSelect else { return false }
        if input.identifier == "username" { return true }
        guard flowType == .authentication else { return false }
        return input.type == "EMAIL_INPUT" || ["email", "phone_number", "login", "identifier"].contains(input.identifier)
    }

    /// Whether a passkey from the keyboard could sign the person in on this step instead: a sign-in flow showing a
    /// username field, for the default session (native passkey sign-in stores that one), with passkeys configured on
    /// the client. `SignIn` runs `runPasskeyAutoFill(anchor:)` while it is true.
    public var offersPasskeyAutoFill: Bool {
        flowType == .authentication && phase == .step && state?.sessionId == nil
            && (client.credentialProvider != nil || client.passkeyAuthenticator != nil)
            && visibleInputs.contains(where: isUsernameField)
    }

    /// True once the flow has completed.
    public var isCompleted: Bool { phase == .completed }
    /// True when the flow ended and can only start again.
    public var canRestart: Bool { phase == .failed }

    /// The field Return moves to from `identifier`'s: the next visible input that takes typing (pickers are
    /// skipped); nil on the last one, where Return submits.
    public func field(after identifier: String) -> FlowInput? {
        let typed = visibleInputs.filter { !$0.isSelect }
        guard let index = typed.firstIndex(where: { $0.identifier == identifier }), index + 1 < typed.count else { return nil }
        return typed[index + 1]
    }

    /// What Return in `identifier`'s field does: on any field but the last, nothing is sent and the next field's
    /// identifier is returned (the view moves the focus there); on the last, the step is submitted with its primary
    /// action and nil is returned.
    @discardableResult
    public func returnPressed(in identifier: String) -> String? {
        if let next = field(after: identifier) { return next.identifier }
        if let primary = primaryAction, !asksForPasskey, redirectURL == nil { submit(actionId: primary.ref) }
        return nil
    }

    /// The value typed for `identifier`.
    public func value(for identifier: String) -> String { values[identifier] ?? "" }
    /// Records what the user typed; the field's own error goes away as they edit it.
    public func setValue(_ value: String, for identifier: String) {
        values[identifier] = value
        if fieldErrors[identifier] != nil { fieldErrors[identifier] = nil }
    }
    /// The error to show next to `identifier`'s field.
    public func fieldError(for identifier: String) -> String? { fieldErrors[identifier] }
    /// True while `actionId` is being sent (a spinner on that button only).
    public func isLoading(actionId: String) -> Bool { loadingActionId == actionId }

    // MARK: What the user does

    /// Starts the flow (the view calls it when it appears); does nothing once started.
    public func start() async {
        guard phase == .idle, !isLoading else { return }
        if let state, state.isPreview {
            return showPreview(state.previewStep ?? .preview(flowType: flowType))
        }
        await run(actionId: nil) { await $0.start() }
    }

    /// Begins a new flow, keeping the values typed (never secrets).
    public func restart() async {
        guard !isLoading else { return }
        stopPasskeyAutoFill()
        await run(actionId: nil) { await $0.restart() }
    }

    /// Submits the step's values with `actionId` without waiting (a button's action). Ignored while a submission
    /// is in flight.
    public func submit(actionId: String) {
        guard !isLoading, phase == .step else { return }
        running = Task { await self.perform(actionId: actionId) }
    }

    /// Submits the step's values with `actionId` and waits for the next step. Ignored while a submission is in
    /// flight, so a double tap sends one request.
    public func perform(actionId: String) async {
        guard !isLoading, phase == .step, let step else { return }
        if state?.isPreview == true { return }  // a preview stays on its step
        // Only this step's inputs go to the server: values of earlier steps stay for display, not for sending.
        let sent = Dictionary(uniqueKeysWithValues: step.inputs.compactMap { input in values[input.identifier].map { (input.identifier, $0) } })
        if step.inputs.contains(where: { $0.type == "PASSWORD_INPUT" && !(sent[$0.identifier] ?? "").isEmpty }) { sentPassword = true }
        await run(actionId: actionId) { await $0.submit(actionId: actionId, inputs: sent) }
    }

    /// Offers passkeys in the keyboard's suggestions of the username field while this step shows
    /// (`PasskeyAutoFillModel`, `LatchkeyClient.beginAutoFillAssistedPasskeyLogin(withRequest:)`), and waits until it
    /// ends. The server-driven flow has no passkey-first step of its own, so this runs beside it: a passkey the person
    /// taps signs in natively, the flow is left where it was, and the model completes as if the flow had (the state
    /// shows the user first, then `onComplete`). Cancelling the calling task stops it (SwiftUI's `.task` does so when
    /// the view goes away), and so does anything the person does on the step: the passkey sheet
    /// (`submitPasskey()`), a provider's page, a new flow. Does nothing unless `offersPasskeyAutoFill`.
    /// - Parameter anchor: the window the system attaches to; nil leaves it to the system.
    public func runPasskeyAutoFill(anchor: (@MainActor () -> PresentationAnchor?)? = nil) async {
        guard offersPasskeyAutoFill else { return }
        passkeyAutoFill.anchor = anchor
        passkeyAutoFill.onSignIn = { [weak self] in self?.completedWithPasskeyAutoFill() }
        await passkeyAutoFill.run()
    }

    /// Stops the keyboard's passkey suggestions (the person picked another way).
    public func stopPasskeyAutoFill() { passkeyAutoFill.stop() }

    /// Runs the passkey ceremony the step asks for (the platform's sheet on Apple) and submits its result.
    public func submitPasskey() async {
        guard !isLoading, phase == .step, let step, let action = primaryAction else { return }
        stopPasskeyAutoFill()
        loadingActionId = action.ref
        isLoading = true
        let inputs: [String: String]
        do {
            inputs = try await client.passkeyInputs(for: step)
        } catch {
            loadingActionId = nil
            isLoading = false
            // Closing the system sheet is the user's choice, not a failure: the step stays as it was.
            if let code = (error as? LatchkeyError)?.code, code == .canceled || code == .passkeyCanceled { return }
            show(error: error)
            return
        }
        loadingActionId = nil
        isLoading = false
        await run(actionId: action.ref) { await $0.submit(actionId: action.ref, inputs: inputs) }
    }

    /// Shows the redirection step's page (an identity provider's sign-in) through the client's user agent and
    /// continues with what the browser brings back (`FlowRunner.followRedirection(presentationContext:)`): the next
    /// step, or the completed sign-in. Closing the page leaves the step as it was; a provider that refused ends the
    /// flow with its message (`restart()` begins again). Does nothing unless the step is a redirection.
    /// - Parameter presentationContextProvider: what the page is presented from; nil uses
    ///   ``presentationContextProvider``.
    public func followRedirection(presentationContextProvider: (any PresentationContextProviding)? = nil) async {
        guard !isLoading, phase == .step, redirectURL != nil else { return }
        stopPasskeyAutoFill()
        let box = (presentationContextProvider ?? self.presentationContextProvider).map(PresentationContextProviderBox.init)
        await run(actionId: primaryAction?.ref) { await $0.followRedirection(presentationContext: box) }
    }

    /// Continues a redirection step with what the browser brought back (its `code` and `state` query items), for an
    /// app that showed ``redirectURL`` itself (`FlowRunner.continueRedirect(callback:)`). A callback carrying `error`
    /// ends the flow with the provider's message.
    public func continueRedirect(callback: URL) async {
        guard !isLoading, phase == .step, redirectURL != nil else { return }
        await run(actionId: primaryAction?.ref) { await $0.continueRedirect(callback: callback) }
    }

    /// Waits for a submission started with `submit(actionId:)`.
    public func waitUntilIdle() async { await running?.value }

    /// Waits for the passkey upgrade a completed sign-in started (`upgradesToPasskey`), if one did.
    public func waitForPasskeyUpgrade() async { await upgrading?.value }

    // MARK: Internals

    /// Right after a password sign-in, as Apple asks: the session's token, then the conditional registration.
    private func offerPasskeyUpgrade() async {
        do {
            let token = try await (state?.session ?? client.session()).authToken()
            passkeyUpgrade = try await client.upgradeToPasskey(authToken: token)
        } catch let failure as LatchkeyError {
            passkeyUpgradeError = failure
        } catch {
            passkeyUpgradeError = LatchkeyError(.unknownError, "the passkey upgrade failed: \(type(of: error))")
        }
    }

    /// The person signed in with a passkey from the keyboard: the flow is done, as if it had completed.
    private func completedWithPasskeyAutoFill() {
        guard phase != .completed else { return }
        phase = .completed
        user = passkeyAutoFill.user
        forgetSecrets()
        fieldErrors = [:]
        error = nil
        errorCode = nil
        notice = nil
        onComplete?(user)
    }

    private func run(actionId: String?, _ call: (FlowRunner) async -> FlowRunnerState) async {
        isLoading = true
        loadingActionId = actionId
        await runner.setCheckMessages(i18n.checkMessages)
        let before = step
        var result: FlowRunnerState
        if let state { result = await state.tracked { await call(runner) } } else { result = await call(runner) }
        var restarted = false
        // An execution that expired (or that the server no longer knows) is not the user's fault: begin again.
        if case .failed(let failure) = result, before != nil,
            failure.code == .sessionExpired || failure.code == .invalidInput && failure.serverCode == nil
        {
            result = await runner.restart()
            restarted = result.isStep
        }
        isLoading = false
        loadingActionId = nil
        await apply(result, previous: before)
        // The username field went away (the next step, a finished flow): so do its keyboard's passkey suggestions.
        if !offersPasskeyAutoFill { stopPasskeyAutoFill() }
        if restarted { show(message: i18n.t(.flowExpired), code: .sessionExpired) }
    }

    private func apply(_ result: FlowRunnerState, previous: EmbeddedFlowResponse?) async {
        switch result {
        case .idle:
            phase = .idle
        case .step(let next):
            let sameStep =
                previous.map { $0.flowId == next.flowId && Set($0.inputs.map(\.identifier)) == Set(next.inputs.map(\.identifier)) } ?? false
            // A step the server refused (a wrong password) comes back with what was typed except secrets; a new
            // step forgets every secret typed so far (codes are never carried over). A step stopped by the
            // client-side checks keeps everything.
            secretKeys.formUnion(next.inputs.filter { $0.isSecret || $0.oneTimeUse }.map(\.identifier))
            if !sameStep || next.error != nil { forgetSecrets() }
            step = next
            phase = .step
            fieldErrors = Dictionary(next.fieldErrors.map { ($0.identifier, $0.message) }, uniquingKeysWith: { first, _ in first })
            notice = next.additionalData["emailSent"] == "true" && next.error == nil ? i18n.t(.codeSent) : nil
            if let flowError = next.error {
                // The server's in-band errors carry its code and a localized message; the SDK's own (the network)
                // only technical text, so the table's words are shown for those.
                state?.diagnose(flowError.error)
                show(message: flowError.userMessage ?? i18n.t(UIText.forError(flowError.code)), code: flowError.code)
            } else {
                error = nil
                errorCode = nil
            }
        case .completed(let response):
            step = response
            phase = .completed
            user = response.user
            forgetSecrets()
            fieldErrors = [:]
            error = nil
            errorCode = nil
            notice = nil
            if flowType != .recovery { await state?.didSignIn(response.user) }
            onComplete?(response.user)
            if upgradesToPasskey, flowType == .authentication, sentPassword {
                upgrading = Task { await self.offerPasskeyUpgrade() }
            }
        case .failed(let failure):
            phase = .failed
            fieldErrors = [:]
            notice = nil
            // The person's words only: the server's or provider's message, else this language's text for the kind of
            // failure; the technical message goes to the developer (`LatchkeyState.diagnosis` and its log).
            state?.diagnose(failure.error)
            show(message: failure.userMessage ?? i18n.t(UIText.forError(failure.code)), code: failure.code)
        }
    }

    /// A model showing `step` at once, for previews of `FlowStepView`, `FlowInputField`, `FlowActionButton` and screens
    /// of the app's own; over a `LatchkeyState.preview(...)` (the default) nothing is ever sent.
    public static func preview(
        state: LatchkeyState = .preview(), step: EmbeddedFlowResponse = .preview(), values: [String: String] = [:],
        fieldErrors: [String: String] = [:], error: String? = nil
    ) -> AuthFlowModel {
        let model = AuthFlowModel(state: state, flowType: step.flowType)
        model.showPreview(step)
        model.values = values
        model.fieldErrors = fieldErrors
        model.error = error
        return model
    }

    /// Shows `step` without a server (previews).
    func showPreview(_ step: EmbeddedFlowResponse) {
        self.step = step
        phase = .step
    }

    private func forgetSecrets() {
        for key in secretKeys where values[key] != nil { values[key] = nil }
    }

    /// Switches the step's code field to a recovery code (letters and digits, `ABCDE-FGHJK`) for a person without
    /// their authenticator; the code goes in the same field and is sent with the same action. Does nothing when the
    /// step takes no recovery code (``acceptsRecoveryCode``).
    public func useRecoveryCode() {
        guard acceptsRecoveryCode else { return }
        isEnteringRecoveryCode = true
    }

    private func show(error: any Error) {
        let error = error as? LatchkeyError ?? LatchkeyError(.unknownError, String(describing: error))
        state?.diagnose(error)
        show(message: i18n.message(for: error), code: error.code)
    }

    private func show(message: String, code: LatchkeyError.Code) {
        error = message
        errorCode = code
        onError?(message)
    }
}

/// ThunderID's name for the sign-in flow's state.
public typealias SignInState = AuthFlowModel
/// ThunderID's name for the registration flow's state (the same model with `flowType: .registration`).
public typealias SignUpState = AuthFlowModel

extension EmbeddedFlowResponse {
    /// A first step for previews: a heading, an email and a password field, the submit action and (to sign in) a
    /// passkey alternative, labelled in English as the server's default flows are. A real flow's labels come from the
    /// server in the person's language.
    public static func preview(flowType: EmbeddedFlowType = .authentication) -> EmbeddedFlowResponse {
        let registration = flowType == .registration
        let title = registration ? "Create account" : "Sign in"
        return EmbeddedFlowResponse(
            flowId: "preview", flowType: flowType,
            inputs: [
                FlowInput(ref: "input_email", identifier: registration ? "email" : "username", type: "EMAIL_INPUT", required: true, label: "Email"),
                FlowInput(ref: "input_password", identifier: "password", type: "PASSWORD_INPUT", required: true, label: "Password")
            ],
            actions: [FlowAction(ref: "action_submit", type: "SUBMIT", label: title)]
                + (registration ? [] : [FlowAction(ref: "action_passkey", type: "PASSKEY", label: "Use a passkey")]),
            components: [FlowComponent(id: "title", type: "TEXT", label: title)])
    }
}
