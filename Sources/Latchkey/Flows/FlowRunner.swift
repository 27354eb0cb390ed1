import Foundation

/// Where a `FlowRunner` stands.
public enum FlowRunnerState: Sendable, Equatable {
    case idle
    /// Waiting for the user: render the step (its `error` and `fieldErrors` belong next to the inputs).
    case step(EmbeddedFlowResponse)
    /// Done; after sign-in or sign-up the session is established.
    case completed(EmbeddedFlowResponse)
    /// The flow cannot continue; `restart()` begins a new one.
    case failed(FlowRunnerFailure)
}

/// Why a flow stopped.
public struct FlowRunnerFailure: Sendable, Equatable {
    public var code: LatchkeyError.Code
    /// The person's message when the server or the provider gave one, else the SDK's technical message.
    public var message: String
    public var serverCode: String?
    /// The message for the person, in their language, when the server or the provider gave one; nil when `message`
    /// is the SDK's technical English (a UI then shows its own text for `code`).
    public var userMessage: String? = nil
    /// The technical description for developers, when it differs from `message`.
    public var detail: String? = nil

    /// The failure as an error (its technical message), for logs and `LatchkeyDiagnosis`.
    public var error: LatchkeyError { LatchkeyError(code, detail ?? message, serverCode: serverCode, userMessage: userMessage) }
}

/// The texts of the checks `FlowRunner` makes before sending a step (the server's own answers come localized from
/// the server); English by default, replaced by UIs that show another language.
public struct FlowCheckMessages: Sendable, Equatable {
    /// A required input is empty.
    public var required: String
    /// A SELECT input's value is not one of its options.
    public var chooseOption: String
    /// A `validation` rule without a message of its own failed.
    public var invalidValue: String

    /// Messages; the defaults are English.
    public init(
        required: String = "This field is required", chooseOption: String = "Choose one of the options",
        invalidValue: String = "The value is not valid"
    ) {
        self.required = required; self.chooseOption = chooseOption; self.invalidValue = invalidValue
    }
}

/// A UI-independent driver of the flow loop, for terminal prompts (the CLI) and SwiftUI views alike: it keeps the
/// current step, refuses a second submission while one is in flight (with ThunderID's SDK a double tap turns into
/// ICS-1002 and a frozen form), checks inputs against the step's own rules before sending, keeps the step when the
/// server rejects a stale challenge, keeps the step when the server cannot be reached (submitting again retries it),
/// and turns every failure into a state instead of a thrown error.
public actor FlowRunner {
    /// Where the flow stands.
    public private(set) var state: FlowRunnerState = .idle
    /// True while a step is being sent.
    public private(set) var isSubmitting = false
    /// The flow this runner drives.
    public nonisolated let flow: AppNativeFlow
    /// The redirect URI sent with the federated action whose redirection step is open: where the browser comes back.
    private var redirect: AppNativeFlow.RedirectURI?
    /// The texts of the client-side checks.
    public var checkMessages: FlowCheckMessages

    /// A runner for one flow of `request.flowType`; nothing is sent before `start()`.
    public init(
        client: LatchkeyClient, request: EmbeddedFlowRequestConfig, sessionId: String? = nil,
        checkMessages: FlowCheckMessages = FlowCheckMessages()
    ) {
        self.init(client: client, request: request, session: client.session(sessionId), checkMessages: checkMessages)
    }

    /// A runner for one flow of `request.flowType` for `session`: a completed sign-in or registration stores its
    /// tokens there, a sign-out flow ends it. Nothing is sent before `start()`.
    public init(
        client: LatchkeyClient, request: EmbeddedFlowRequestConfig, session: LatchkeySession,
        checkMessages: FlowCheckMessages = FlowCheckMessages()
    ) {
        self.init(flow: AppNativeFlow(client: client, request: request, session: session), checkMessages: checkMessages)
    }

    /// A runner for `flow`; nothing is sent before `start()`.
    public init(flow: AppNativeFlow, checkMessages: FlowCheckMessages = FlowCheckMessages()) {
        self.flow = flow
        self.checkMessages = checkMessages
    }

    /// Changes the texts of the client-side checks (a language switch).
    public func setCheckMessages(_ messages: FlowCheckMessages) { checkMessages = messages }

    /// Starts the flow (or starts over).
    @discardableResult
    public func start() async -> FlowRunnerState {
        guard !isSubmitting else { return state }
        return await send(EmbeddedSignInPayload())
    }

    /// Starts a new flow, abandoning the current one.
    @discardableResult
    public func restart() async -> FlowRunnerState { await start() }

    /// Submits the current step. Inputs failing the step's declared rules are reported as field errors without a
    /// round trip; a submission while another is in flight is ignored.
    ///
    /// Choosing a `FEDERATED` action (sign in with an identity provider) adds the input `redirect_uri`, unless
    /// `inputs` has one: the redirect URI the client's user agent prepared (the loopback listener's), else the
    /// configured `afterSignInUrl` (none when neither exists: the server then uses the application's first). The
    /// answer is a `.redirection` step: ``followRedirection(presentationContext:)`` shows its page and continues.
    @discardableResult
    public func submit(actionId: String?, inputs: [String: String]) async -> FlowRunnerState {
        guard !isSubmitting, case .step(var step) = state else { return state }
        let action = actionId.flatMap { id in step.actions.first { $0.ref == id } }
        if action?.type == nil || action?.type == "SUBMIT" {
            let problems = Self.check(inputs, against: step, messages: checkMessages)
            if !problems.isEmpty {
                step.fieldErrors = problems
                step.error = nil
                state = .step(step)
                return state
            }
        }
        guard action?.type == "FEDERATED" else {
            return await send(EmbeddedSignInPayload(flowId: step.flowId, actionId: actionId, inputs: inputs))
        }
        var inputs = inputs
        isSubmitting = true  // no second submission while the redirect URI is prepared
        let offered: AppNativeFlow.RedirectURI?
        if let given = inputs["redirect_uri"] {
            offered = AppNativeFlow.RedirectURI(uri: given, isReserved: false)
        } else if let prepared = try? await flow.redirectURI() {
            offered = prepared
            inputs["redirect_uri"] = prepared.uri
        } else {
            offered = nil
        }
        isSubmitting = false
        let result = await send(EmbeddedSignInPayload(flowId: step.flowId, actionId: actionId, inputs: inputs))
        if let offered {
            if result.isRedirection {
                if let previous = redirect, previous.uri != offered.uri { release(previous) }
                redirect = offered
            } else {
                release(offered)
            }
        }
        return result
    }

    /// Follows the current `.redirection` step (an identity provider's sign-in page): shows its `redirectURL` through
    /// the client's ``AuthorizationUserAgent``, waits for the browser to come back to the redirect URI, then continues
    /// with what it brought (``continueRedirect(callback:)``).
    ///
    /// - The redirect URI waited on is the one sent with the federated action (see ``submit(actionId:inputs:)``),
    ///   else the configured `afterSignInUrl`.
    /// - Closing the page leaves the step as it was (following it again shows the page again: with the Apple user
    ///   agent at once; the loopback user agent's listener is gone, so start over there).
    /// - A page that cannot be shown (no presentation context, no redirect URI) leaves the step open with the error.
    /// - Parameter presentationContext: what the page is presented from (required by the Apple user agent).
    /// - Returns: the new state; the state unchanged when the current step is not a redirection or a submission is
    ///   in flight.
    @discardableResult
    public func followRedirection(presentationContext: PresentationContextProviderBox? = nil) async -> FlowRunnerState {
        guard !isSubmitting, case .step(var step) = state, step.type == .redirection else { return state }
        guard let page = step.redirectURL.flatMap(URL.init(string:)), let scheme = page.scheme?.lowercased(),
            scheme == "https" || scheme == "http"
        else {
            step.error = Self.localError(LatchkeyError(.serverError, "the redirection step has no page to open"))
            state = .step(step)
            return state
        }
        let redirectURI: String
        if let redirect {
            redirectURI = redirect.uri
        } else if let configured = flow.configuredRedirectURI {
            redirectURI = configured
        } else {
            step.error = Self.localError(LatchkeyError(.invalidConfiguration, "afterSignInUrl (the redirect URI) is not set"))
            state = .step(step)
            return state
        }
        isSubmitting = true
        let callback: URL
        do {
            // The callback's state is the flow's business: the server checks it with the code.
            callback = try await flow.showRedirection(page, redirectURI: redirectURI, presentationContext: presentationContext)
        } catch let error as LatchkeyError where error.code == .canceled {
            isSubmitting = false
            return state  // closed by the person: the step stays as it was
        } catch {
            isSubmitting = false
            let error = error as? LatchkeyError ?? LatchkeyError(.unknownError, String(describing: error))
            step.error = Self.localError(error)
            state = .step(step)
            return state
        }
        redirect?.isReserved = false  // the user agent took its listener
        isSubmitting = false
        guard AuthorizationRequests.sameEndpoint(callback, redirectURI) else {
            release(redirect)
            redirect = nil
            state = .failed(
                FlowRunnerFailure(
                    code: .invalidRedirectUri, message: "the browser came back to another address than the redirect URI", serverCode: nil))
            return state
        }
        return await continueRedirect(callback: callback)
    }

    /// Continues the current `.redirection` step with the URL the browser came back to (its `code` and `state`):
    /// submits the step's `SUBMIT` action with exactly those two inputs. Use it when the app showed `redirectURL`
    /// itself; ``followRedirection(presentationContext:)`` calls it.
    ///
    /// A callback carrying `error` (the provider, or the person there, refused) ends the flow: `.failed` with the
    /// provider's description (`access_denied` is `.authenticationFailed`); one missing its `code` or `state` too
    /// (`.invalidGrant`).
    /// - Returns: the new state; the state unchanged when the current step is not a redirection or a submission is
    ///   in flight.
    @discardableResult
    public func continueRedirect(callback: URL) async -> FlowRunnerState {
        guard !isSubmitting, case .step(let step) = state, step.type == .redirection else { return state }
        let query = LatchkeyClient.callbackParameters(callback)
        let providerName = step.additionalData["idpName"] ?? step.additionalData["idpId"] ?? "The identity provider"
        if let error = query["error"] {
            release(redirect)
            redirect = nil
            let description = query["error_description"].flatMap { $0.isEmpty ? nil : $0 }
            state = .failed(
                FlowRunnerFailure(
                    code: LatchkeyError.oauth(error, description: description, status: nil).code,
                    message: query["error_user_msg"] ?? description ?? "\(providerName) did not sign you in (\(error)).", serverCode: error,
                    userMessage: query["error_user_msg"]))
            return state
        }
        guard let code = query["code"], !code.isEmpty, let returned = query["state"], !returned.isEmpty else {
            release(redirect)
            redirect = nil
            state = .failed(
                FlowRunnerFailure(
                    code: .invalidGrant, message: "\(providerName) sent the browser back without a code and state.", serverCode: nil))
            return state
        }
        let action = step.actions.first { $0.type == "SUBMIT" } ?? step.actions.first
        return await send(EmbeddedSignInPayload(flowId: step.flowId, actionId: action?.ref, inputs: ["code": code, "state": returned]))
    }

    /// The client-side checks the server will repeat: required, SELECT options, and the `validation` rules.
    public static func check(
        _ inputs: [String: String], against step: EmbeddedFlowResponse,
        messages: FlowCheckMessages = FlowCheckMessages()
    ) -> [FlowFieldError] {
        var problems: [FlowFieldError] = []
        for input in step.inputs {
            let value = inputs[input.identifier] ?? ""
            if value.isEmpty {
                if input.required { problems.append(.init(identifier: input.identifier, message: messages.required)) }
                continue
            }
            if !input.options.isEmpty, !input.options.contains(value) {
                problems.append(.init(identifier: input.identifier, message: messages.chooseOption))
                continue
            }
            if let rule = input.validation.first(where: { !$0.accepts(value) }) {
                problems.append(.init(identifier: input.identifier, message: rule.message ?? messages.invalidValue))
            }
        }
        return problems
    }

    private func send(_ payload: EmbeddedSignInPayload) async -> FlowRunnerState {
        isSubmitting = true
        defer { isSubmitting = false }
        let previous = state
        do {
            let response = try await flow.step(payload)
            switch response.flowStatus {
            case .promptOnly: state = .step(response)
            case .complete: state = .completed(response)
            case .error:
                if response.error?.serverCode == "ICS-1002", case .step(var step) = previous {
                    step.error = response.error  // the step is still open on the server: show it again
                    state = .step(step)
                } else {
                    state = .failed(
                        FlowRunnerFailure(
                            code: response.error?.code ?? .unknownError,
                            message: response.error?.message ?? "The flow ended with an error.",
                            serverCode: response.error?.serverCode,
                            userMessage: response.error?.userMessage,
                            detail: response.error?.description))
                }
            }
        } catch let error as LatchkeyError where Self.isTransient(error.code) && previous.isStep {
            // The step never reached the server, or its answer was lost: it is still open with the challenge the
            // SDK holds, so the same step is shown with the error and submitting it again retries.
            if case .step(var step) = previous {
                step.error = FlowError(
                    code: error.code, serverCode: error.serverCode ?? "", messageKey: "",
                    message: error.userMessage ?? error.message, description: error.message)
                step.fieldErrors = []
                state = .step(step)
            }
        } catch let error as LatchkeyError {
            state = .failed(
                FlowRunnerFailure(
                    code: error.code, message: error.userMessage ?? error.message, serverCode: error.serverCode, userMessage: error.userMessage,
                    detail: error.message))
        } catch {
            state = .failed(FlowRunnerFailure(code: .unknownError, message: String(describing: error), serverCode: nil))
        }
        // A redirection step left behind no longer needs the redirect URI reserved for it.
        if !state.isRedirection, let pending = redirect {
            release(pending)
            redirect = nil
        }
        return state
    }

    /// Gives back a redirect URI the user agent reserved and nobody will use.
    private func release(_ redirect: AppNativeFlow.RedirectURI?) {
        if let redirect { flow.release(redirect) }
    }

    /// An error of the SDK's own shown on the step (the server's come with their code and localized message).
    private static func localError(_ error: LatchkeyError) -> FlowError {
        FlowError(
            code: error.code, serverCode: error.serverCode ?? "", messageKey: "", message: error.userMessage ?? error.message,
            description: error.message)
    }

    /// Failures that say nothing about the step itself: the network, a timeout, the server's own trouble.
    static func isTransient(_ code: LatchkeyError.Code) -> Bool {
        code == .networkError || code == .requestTimeout || code == .serverError
    }
}

extension FlowRunnerState {
    /// True when waiting for the user's input on a step.
    public var isStep: Bool { if case .step = self { true } else { false } }

    /// True when the step is a redirection to an identity provider (`FlowRunner.followRedirection(presentationContext:)`).
    public var isRedirection: Bool { if case .step(let step) = self { step.type == .redirection } else { false } }
}
