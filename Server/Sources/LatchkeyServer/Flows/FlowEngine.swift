import Foundation

/// What an executor decided.
enum ExecutorOutcome {
    /// Continue with the node's `next`.
    case next
    /// Continue with the node's named branch.
    case branch(String)
    /// Re-present `onFailure` (or `at`) with the error; a flow without such a prompt ends in ERROR.
    case retry(FlowFailure, at: String? = nil)
    /// Re-present `onFailure` with per-field problems.
    case fieldErrors([FlowResponse.FieldError])
    /// Ask for more inputs at `onIncomplete` (dynamic inputs), optionally with field problems.
    case collect([FlowInputSpec], [FlowResponse.FieldError])
    /// End the flow in ERROR.
    case fail(FlowFailure)
}

/// Where a run stopped.
enum FlowStop {
    case prompt(FlowNode)
    case complete
    case failed(FlowFailure)
}

/// Walks a flow graph: applies a submission at the current prompt, then runs tasks until the next prompt or the end.
struct FlowEngine {
    let executors: FlowExecutors
    let graph: FlowGraph

    /// At most this many nodes per request, so a cyclic custom graph cannot spin.
    private static let maxSteps = 64

    /// Runs from `nodeId` (a start, task or end node; a prompt stops at once).
    func run(from nodeId: String, _ run: inout FlowRun) async throws -> FlowStop {
        var id = nodeId
        for _ in 0..<Self.maxSteps {
            guard let node = graph.node(id) else { return .failed(.internalError) }
            switch node.kind {
            case .prompt:
                run.state.current = node.id
                return .prompt(node)
            case .end:
                return .complete
            case .start:
                guard let next = node.next else { return .failed(.internalError) }
                id = next
            case .task:
                guard let name = node.executor, let executor = executors.executor(name) else { return .failed(.internalError) }
                let outcome = try await executor(node, &run)
                switch outcome {
                case .next:
                    guard let next = node.next else { return .failed(.internalError) }
                    id = next
                case .branch(let name):
                    guard let next = node.branches?[name] ?? node.next else { return .failed(.internalError) }
                    id = next
                case .retry(let failure, let at):
                    guard let target = at ?? node.onFailure else { return .failed(failure) }
                    run.error = failure
                    id = target
                case .fieldErrors(let errors):
                    guard let target = node.onFailure ?? node.onIncomplete else {
                        return .failed(.badRequest("invalid inputs: \(errors.map(\.identifier).joined(separator: ", "))"))
                    }
                    run.fieldErrors = errors
                    id = target
                case .collect(let inputs, let errors):
                    guard let target = node.onIncomplete else { return .failed(.internalError) }
                    run.state.dynamicInputs = inputs
                    run.fieldErrors = errors
                    id = target
                case .fail(let failure):
                    return .failed(failure)
                }
            }
        }
        run.logger.error("flow exceeded the step limit", metadata: ["flow": .string(graph.id)])
        return .failed(.internalError)
    }

    /// Applies a submission at the prompt the execution waits on. Returns the prompt again (with field errors or an
    /// error) when the submission cannot proceed, else continues with the action's next node.
    func submit(action actionRef: String?, _ run: inout FlowRun) async throws -> FlowStop {
        guard let prompt = graph.node(run.state.current), prompt.kind == .prompt else { return .failed(.internalError) }
        let inputs = (prompt.inputs ?? []) + (run.state.dynamicInputs ?? [])
        let actions = prompt.actions ?? []
        // Only this prompt's inputs are accepted; anything else in the request is ignored.
        let declared = Set(inputs.map(\.identifier))
        run.submitted = run.submitted.filter { declared.contains($0.key) }
        let action: FlowActionSpec
        if let actionRef {
            guard let chosen = actions.first(where: { $0.ref == actionRef }) else {
                run.error = .invalidAction
                return .prompt(prompt)
            }
            action = chosen
        } else if !inputs.isEmpty, !run.submitted.isEmpty, let only = Self.soleSubmitAction(actions) {
            action = only  // thunderID's single-action auto-select (alternatives such as a passkey button do not count)
        } else {
            return .prompt(prompt)
        }
        if action.validates ?? true {
            let problems = Self.validate(inputs, run.submitted, locale: run.locale)
            if !problems.isEmpty {
                run.fieldErrors = problems
                return .prompt(prompt)
            }
        }
        for spec in inputs where !spec.isSensitive {
            if let value = run.submitted[spec.identifier] { run.state.inputs[spec.identifier] = value }
        }
        run.state.additionalData = [:]
        return try await self.run(from: action.next, &run)
    }

    /// The one action that submits the prompt's inputs, when there is exactly one (`SUBMIT` or untyped).
    static func soleSubmitAction(_ actions: [FlowActionSpec]) -> FlowActionSpec? {
        let submitting = actions.filter { ($0.type ?? "SUBMIT") == "SUBMIT" }
        return submitting.count == 1 ? submitting[0] : nil
    }

    /// Presence, options and the declared rules (`regex`, `minLength`, `maxLength` on Unicode code points); the
    /// messages in `locale`.
    static func validate(_ inputs: [FlowInputSpec], _ submitted: [String: String], locale: SupportedLocale = .en) -> [FlowResponse.FieldError] {
        var problems: [FlowResponse.FieldError] = []
        func problem(_ spec: FlowInputSpec, _ key: String) {
            problems.append(.init(identifier: spec.identifier, message: MessageCatalog.text(key, locale: locale, default: key)))
        }
        for spec in inputs {
            let value = submitted[spec.identifier] ?? ""
            if value.isEmpty {
                if spec.required { problem(spec, "validation.field_required") }
                continue
            }
            if value.unicodeScalars.count > 4096 {
                problem(spec, "validation.too_long")
                continue
            }
            if let options = spec.options, !options.isEmpty, !options.contains(value) {
                problem(spec, "validation.option")
                continue
            }
            for rule in spec.validation ?? [] {
                let count = value.unicodeScalars.count
                let failed: Bool
                switch rule.type {
                case "minLength": failed = Self.limit(rule).map { count < $0 } ?? false
                case "maxLength": failed = Self.limit(rule).map { count > $0 } ?? false
                case "regex":
                    if let pattern = rule.value.stringValue {
                        failed = value.range(of: pattern, options: .regularExpression) == nil
                    } else {
                        failed = false
                    }
                default: failed = false
                }
                if failed {
                    problems.append(.init(identifier: spec.identifier, message: Self.message(rule, locale: locale)))
                }
            }
        }
        return problems
    }

    /// A length rule's bound (an integer, or a string holding one); nil when the rule is malformed.
    private static func limit(_ rule: FlowValidationRule) -> Int? {
        if let n = rule.value.doubleValue, n.isFinite, n >= 0, n < 1_000_000 { return Int(n) }
        return rule.value.stringValue.flatMap { Int($0) }
    }

    /// A failed rule's text in `locale`: its catalog key, else its own (custom, untranslated) message, else the
    /// catalog's default for the rule type.
    static func message(_ rule: FlowValidationRule, locale: SupportedLocale) -> String {
        let arguments = ["count": String(limit(rule) ?? 0)]
        if let key = rule.key, let text = MessageCatalog.text(key, locale: locale, arguments: arguments) { return text }
        if let message = rule.message { return message }
        let key =
            switch rule.type {
            case "minLength": "validation.min_length"
            case "maxLength": "validation.max_length"
            default: "validation.format"
            }
        return MessageCatalog.text(key, locale: locale, arguments: arguments, default: key)
    }
}
