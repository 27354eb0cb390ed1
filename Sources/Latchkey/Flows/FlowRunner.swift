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
    public var message: String
    public var serverCode: String?
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
/// current step, refuses a second submission while one is in flight (the vendor's double tap turns into ICS-1002 and
/// a frozen form), checks inputs against the step's own rules before sending, keeps the step when the server
/// rejects a stale challenge, keeps the step when the server cannot be reached (submitting again retries it), and
/// turns every failure into a state instead of a thrown error.
public actor FlowRunner {
    /// Where the flow stands.
    public private(set) var state: FlowRunnerState = .idle
    /// True while a step is being sent.
    public private(set) var isSubmitting = false
    private let client: LatchkeyClient
    private let request: EmbeddedFlowRequestConfig
    private let sessionId: String?
    /// The texts of the client-side checks.
    public var checkMessages: FlowCheckMessages

    /// A runner for one flow of `request.flowType`; nothing is sent before `start()`.
    public init(
        client: LatchkeyClient, request: EmbeddedFlowRequestConfig, sessionId: String? = nil,
        checkMessages: FlowCheckMessages = FlowCheckMessages()
    ) {
        self.client = client
        self.request = request
        self.sessionId = sessionId
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
        return await send(EmbeddedSignInPayload(flowId: step.flowId, actionId: actionId, inputs: inputs))
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
            let response: EmbeddedFlowResponse =
                request.flowType == .registration
                ? try await client.signUp(payload: payload, request: request, sessionId: sessionId)
                : try await client.signIn(payload: payload, request: request, sessionId: sessionId)
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
                            serverCode: response.error?.serverCode))
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
            state = .failed(FlowRunnerFailure(code: error.code, message: error.userMessage ?? error.message, serverCode: error.serverCode))
        } catch {
            state = .failed(FlowRunnerFailure(code: .unknownError, message: String(describing: error), serverCode: nil))
        }
        return state
    }

    /// Failures that say nothing about the step itself: the network, a timeout, the server's own trouble.
    static func isTransient(_ code: LatchkeyError.Code) -> Bool {
        code == .networkError || code == .requestTimeout || code == .serverError
    }
}

extension FlowRunnerState {
    /// True when waiting for the user's input on a step.
    public var isStep: Bool { if case .step = self { true } else { false } }
}
