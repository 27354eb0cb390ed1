import Foundation
import LatchkeyJOSE

/// The kinds of flow an application can run (thunderID `flowType`).
public enum FlowType: String, Codable, Sendable, CaseIterable {
    case authentication = "AUTHENTICATION"
    case registration = "REGISTRATION"
    case recovery = "RECOVERY"
    case signOut = "SIGNOUT"
}

/// A flow is data: a small graph of nodes. A prompt asks the client for inputs and offers actions; a task runs an
/// executor and moves on by its outcome; the end node completes the flow. Applications may bring their own graphs
/// (`ClientConfiguration.flows`); the built-in ones are in `DefaultFlows`.
public struct FlowGraph: Codable, Sendable, Equatable {
    public var id: String
    public var type: FlowType
    public var nodes: [FlowNode]

    public init(id: String, type: FlowType, nodes: [FlowNode]) {
        self.id = id; self.type = type; self.nodes = nodes
    }

    public func node(_ id: String) -> FlowNode? { nodes.first { $0.id == id } }
    public var start: FlowNode? { nodes.first { $0.kind == .start } }

    /// Structural checks run when a configuration is loaded: one start, every edge points at a node, every task
    /// names a known executor, every prompt has an action.
    public func validate() throws {
        guard nodes.filter({ $0.kind == .start }).count == 1 else { throw ConfigurationError.invalid("flow \(id): needs exactly one start node") }
        let ids = Set(nodes.map(\.id))
        guard ids.count == nodes.count else { throw ConfigurationError.invalid("flow \(id): duplicate node ids") }
        for node in nodes {
            let edges =
                [node.next, node.onFailure, node.onIncomplete].compactMap { $0 } + (node.actions ?? []).map(\.next)
                + (node.branches ?? [:]).values
            for edge in edges where !ids.contains(edge) {
                throw ConfigurationError.invalid("flow \(id): node \(node.id) points at unknown node \(edge)")
            }
            switch node.kind {
            case .task:
                guard let name = node.executor, FlowExecutors.known.contains(name) else {
                    throw ConfigurationError.invalid("flow \(id): node \(node.id) has unknown executor \(node.executor ?? "none")")
                }
            case .prompt:
                guard !(node.actions ?? []).isEmpty else { throw ConfigurationError.invalid("flow \(id): prompt \(node.id) has no action") }
            case .start:
                guard node.next != nil else { throw ConfigurationError.invalid("flow \(id): start has no next node") }
            case .end: break
            }
        }
    }
}

public struct FlowNode: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable { case start, prompt, task, end }

    public var id: String
    public var kind: Kind
    // Prompt
    public var inputs: [FlowInputSpec]?
    public var actions: [FlowActionSpec]?
    /// UI metadata returned with `verbose` (thunderID component tree; labels are `{{ t(ns:key) }}` templates).
    public var components: [JSONValue]?
    // Task
    public var executor: String?
    public var properties: [String: String]?
    /// Where a start or task goes on success.
    public var next: String?
    /// The prompt re-presented, with the error, when the executor fails; without it a failure ends the flow.
    public var onFailure: String?
    /// The prompt that collects inputs the executor found missing (dynamic inputs).
    public var onIncomplete: String?
    /// Named outcomes of an executor (for example `totp` / `email_otp` / `none` of the MFA resolver).
    public var branches: [String: String]?

    public init(
        id: String, kind: Kind, inputs: [FlowInputSpec]? = nil, actions: [FlowActionSpec]? = nil, components: [JSONValue]? = nil,
        executor: String? = nil, properties: [String: String]? = nil, next: String? = nil, onFailure: String? = nil,
        onIncomplete: String? = nil, branches: [String: String]? = nil
    ) {
        self.id = id; self.kind = kind; self.inputs = inputs; self.actions = actions; self.components = components
        self.executor = executor; self.properties = properties; self.next = next; self.onFailure = onFailure
        self.onIncomplete = onIncomplete; self.branches = branches
    }
}

/// One input of a prompt (`data.inputs[]`).
public struct FlowInputSpec: Codable, Sendable, Equatable {
    public var ref: String
    public var identifier: String
    public var type: String
    public var required: Bool
    public var options: [String]?
    public var validation: [FlowValidationRule]?
    /// Cleared from the execution after use and never stored (passwords, one-time codes).
    public var sensitive: Bool?

    public init(
        ref: String, identifier: String, type: String, required: Bool = true, options: [String]? = nil,
        validation: [FlowValidationRule]? = nil, sensitive: Bool? = nil
    ) {
        self.ref = ref; self.identifier = identifier; self.type = type; self.required = required; self.options = options
        self.validation = validation; self.sensitive = sensitive
    }

    var isSensitive: Bool { sensitive ?? ["PASSWORD_INPUT", "OTP_INPUT", "PASSKEY_INPUT"].contains(type) }
}

/// `regex`, `minLength` or `maxLength`, checked on the server after the presence check.
public struct FlowValidationRule: Codable, Sendable, Equatable {
    public var type: String
    public var value: JSONValue
    /// English text shown when the rule fails (the rule's default when absent).
    public var message: String?
    /// Catalog key of `message` (`{count}` is the rule's bound): the text is then sent in the execution's language.
    public var key: String?
    public init(type: String, value: JSONValue, message: String? = nil, key: String? = nil) {
        self.type = type; self.value = value; self.message = message; self.key = key
    }
}

/// One action of a prompt (`data.actions[]`).
public struct FlowActionSpec: Codable, Sendable, Equatable {
    public var ref: String
    public var next: String
    public var type: String?
    /// False for actions that need no inputs (resend a code); the presence and rule checks are skipped.
    public var validates: Bool?

    public init(ref: String, next: String, type: String? = nil, validates: Bool? = nil) {
        self.ref = ref; self.next = next; self.type = type; self.validates = validates
    }
}
