import Foundation

/// Which flow an app-native call runs (thunderID `flowType`; the `PASSWORD_RECOVERY` of ThunderID's SDK does not exist
/// on the server and is not offered).
public enum EmbeddedFlowType: String, Sendable, Codable, CaseIterable {
    case authentication = "AUTHENTICATION"
    case registration = "REGISTRATION"
    case recovery = "RECOVERY"
    case signOut = "SIGNOUT"
}

/// One step's submission (as in ThunderID's SDK). `flowId` nil starts a new flow; afterwards it is the `flowId` of the
/// last response. The SDK remembers each flow's rotating challenge token, so callers never handle it.
public struct EmbeddedSignInPayload: Sendable, Equatable {
    /// The execution to continue (`executionId` on the wire); nil to start.
    public var flowId: String?
    /// The `ref` of the chosen action (`FlowAction.ref`); nil lets a single-action step choose itself.
    public var actionId: String?
    /// Values keyed by input identifier (`FlowInput.identifier`), e.g. `["username": "ada", "password": "…"]`.
    public var inputs: [String: String]

    public init(flowId: String? = nil, actionId: String? = nil, inputs: [String: String] = [:]) {
        self.flowId = flowId; self.actionId = actionId; self.inputs = inputs
    }
}

/// How to run a flow (as in ThunderID's SDK).
public struct EmbeddedFlowRequestConfig: Sendable {
    /// The application; defaults to the configuration's `applicationId`, else its `clientId`.
    public var applicationId: String?
    public var flowType: EmbeddedFlowType
    /// Ask for the UI component tree (`components`) and resolve labels from `/flow/meta`.
    public var verbose: Bool

    public init(applicationId: String? = nil, flowType: EmbeddedFlowType = .authentication, verbose: Bool = true) {
        self.applicationId = applicationId; self.flowType = flowType; self.verbose = verbose
    }
}

/// Where a flow stands after a step.
public enum EmbeddedFlowStatus: String, Sendable, Equatable {
    /// More input is needed (`INCOMPLETE`): render `inputs` and `actions`, then call again.
    case promptOnly = "INCOMPLETE"
    /// Done (`COMPLETE`): after sign-in or sign-up the session is established.
    case complete = "COMPLETE"
    /// The flow ended in an error (`ERROR`); see `error`. Start a new flow to try again.
    case error = "ERROR"
}

/// What kind of step is shown.
public enum EmbeddedFlowStepType: String, Sendable, Equatable {
    case view = "VIEW"
    /// Open `redirectURL` (a federated provider), then continue with its `code`/`state`.
    case redirection = "REDIRECTION"
}

/// One input to collect (`data.inputs[]`).
public struct FlowInput: Sendable, Equatable, Identifiable {
    public var ref: String
    /// The key to submit the value under.
    public var identifier: String
    /// `TEXT_INPUT`, `PASSWORD_INPUT`, `EMAIL_INPUT`, `OTP_INPUT`, `SELECT`, … (open-ended).
    public var type: String
    public var required: Bool
    /// Allowed values of a `SELECT`.
    public var options: [String]
    public var validation: [FlowValidationRule]
    /// A one-time value (code): do not autofill or keep it.
    public var oneTimeUse: Bool
    /// Label resolved from the component tree and `/flow/meta`, when verbose.
    public var label: String?

    public var id: String { identifier }
    /// ThunderID's `SignInState.inputs[].name`.
    public var name: String { identifier }
    /// Passwords and one-time codes: hide while typing.
    public var isSecret: Bool { type == "PASSWORD_INPUT" || type == "OTP_INPUT" }
    public var isSelect: Bool { type == "SELECT" || !options.isEmpty }

    public init(
        ref: String, identifier: String, type: String, required: Bool, options: [String] = [], validation: [FlowValidationRule] = [],
        oneTimeUse: Bool = false, label: String? = nil
    ) {
        self.ref = ref; self.identifier = identifier; self.type = type; self.required = required; self.options = options
        self.validation = validation; self.oneTimeUse = oneTimeUse; self.label = label
    }
}

/// A server-enforced rule (`regex`, `minLength`, `maxLength`); clients may check it before submitting.
public struct FlowValidationRule: Sendable, Equatable {
    public var type: String
    public var value: JSONValue
    public var message: String?

    public init(type: String, value: JSONValue, message: String? = nil) { self.type = type; self.value = value; self.message = message }

    /// True when `input` passes this rule (unknown rule types pass: the server has the last word).
    public func accepts(_ input: String) -> Bool {
        let count = input.unicodeScalars.count
        switch type {
        case "minLength": return count >= bound
        case "maxLength": return count <= bound
        case "regex": return value.stringValue.map { input.range(of: $0, options: .regularExpression) != nil } ?? true
        default: return true
        }
    }

    private var bound: Int {
        if let n = value.doubleValue, n.isFinite, n >= 0, n < 1_000_000 { return Int(n) }
        return value.stringValue.flatMap { Int($0) } ?? 0
    }
}

/// One action the user can take (`data.actions[]`).
public struct FlowAction: Sendable, Equatable, Identifiable {
    /// Submit it as `EmbeddedSignInPayload.actionId`.
    public var ref: String
    public var type: String?
    public var nextNode: String?
    public var label: String?
    /// ThunderID's `SignInState.actions[].id`.
    public var id: String { ref }

    public init(ref: String, type: String? = nil, nextNode: String? = nil, label: String? = nil) {
        self.ref = ref; self.type = type; self.nextNode = nextNode; self.label = label
    }
}

/// A node of the step's UI tree (`data.meta.components`, verbose only).
public struct FlowComponent: Sendable, Equatable, Identifiable {
    public var id: String
    /// `TEXT`, `BLOCK`, `TEXT_INPUT`, `ACTION`, `IMAGE`, `RICH_TEXT`, …
    public var type: String
    public var category: String?
    public var variant: String?
    /// For inputs, the identifier the component binds to.
    public var ref: String?
    /// Label with `{{ t(…) }}` / `{{ meta(…) }}` templates resolved when translations were available.
    public var label: String?
    public var components: [FlowComponent]
    /// Every member as received (src, placeholder, eventType, …).
    public var raw: [String: JSONValue]

    /// A component made by hand (a preview's heading: `FlowComponent(id: "title", type: "TEXT", label: "Sign in")`).
    public init(
        id: String, type: String, category: String? = nil, variant: String? = nil, ref: String? = nil, label: String? = nil,
        components: [FlowComponent] = [], raw: [String: JSONValue] = [:]
    ) {
        self.id = id; self.type = type; self.category = category; self.variant = variant; self.ref = ref; self.label = label
        self.components = components; self.raw = raw
    }
}

/// A per-field validation failure; the same step is shown again.
public struct FlowFieldError: Sendable, Equatable {
    public var identifier: String
    public var message: String
}

/// An error reported inside a flow response: in-band on a re-prompt (wrong password) or terminal (`.error`).
public struct FlowError: Sendable, Equatable {
    /// The ThunderID code it maps to.
    public var code: LatchkeyError.Code
    /// The server's code (`FET-1005`, `ICS-1002` …).
    public var serverCode: String
    public var messageKey: String
    /// The user-facing message (localized by the server when it can).
    public var message: String
    /// Technical description for developers.
    public var description: String?

    /// The message for the person: `message` when the server sent it with its code (its in-band errors are
    /// localized); nil for the SDK's own errors on a step, whose `message` may be technical English.
    public var userMessage: String? { serverCode.isEmpty || message.isEmpty ? nil : message }

    /// The error as a `LatchkeyError` with its technical description, for logs and `LatchkeyDiagnosis`.
    public var error: LatchkeyError {
        LatchkeyError(code, description ?? message, serverCode: serverCode.isEmpty ? nil : serverCode, userMessage: userMessage)
    }
}

/// One step's answer (ThunderID's `EmbeddedFlowResponse`), fully typed.
public struct EmbeddedFlowResponse: Sendable, Equatable {
    /// Pass back as `EmbeddedSignInPayload.flowId` (`executionId` on the wire).
    public var flowId: String
    public var flowStatus: EmbeddedFlowStatus
    public var type: EmbeddedFlowStepType?
    public var flowType: EmbeddedFlowType
    public var inputs: [FlowInput]
    public var actions: [FlowAction]
    public var components: [FlowComponent]
    public var fieldErrors: [FlowFieldError]
    public var error: FlowError?
    public var additionalData: [String: String]
    public var redirectURL: String?
    /// After a COMPLETE sign-in or sign-up: the signed-in user (from the verified ID token).
    public var user: User?

    /// The wire name of `flowId`.
    public var executionId: String { flowId }

    /// A step made by hand: a SwiftUI preview, a test double of the flow API.
    public init(
        flowId: String, flowStatus: EmbeddedFlowStatus = .promptOnly, type: EmbeddedFlowStepType? = .view,
        flowType: EmbeddedFlowType = .authentication, inputs: [FlowInput] = [], actions: [FlowAction] = [],
        components: [FlowComponent] = [], fieldErrors: [FlowFieldError] = [], error: FlowError? = nil,
        additionalData: [String: String] = [:], redirectURL: String? = nil, user: User? = nil
    ) {
        self.flowId = flowId; self.flowStatus = flowStatus; self.type = type; self.flowType = flowType; self.inputs = inputs
        self.actions = actions; self.components = components; self.fieldErrors = fieldErrors; self.error = error
        self.additionalData = additionalData; self.redirectURL = redirectURL; self.user = user
    }
}
