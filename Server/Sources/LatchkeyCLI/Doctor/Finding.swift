/// One thing `latchkey doctor` found: what it checked, how it went, and what to do about it.
struct Finding: Sendable, Equatable {
    enum Outcome: Sendable, Equatable {
        case passed, warning, failed, info
        var mark: String {
            switch self {
            case .passed: "ok  "
            case .warning: "warn"
            case .failed: "FAIL"
            case .info: "info"
            }
        }
    }
    /// The check's short name (`discovery`, `jwks`, `rp-id`, `apple-app-site-association` …).
    var check: String
    var outcome: Outcome
    var message: String
    /// What to change; nil when nothing needs changing.
    var fix: String?

    static func passed(_ check: String, _ message: String) -> Finding { Finding(check: check, outcome: .passed, message: message) }
    static func info(_ check: String, _ message: String) -> Finding { Finding(check: check, outcome: .info, message: message) }
    static func warning(_ check: String, _ message: String, fix: String) -> Finding {
        Finding(check: check, outcome: .warning, message: message, fix: fix)
    }
    static func failed(_ check: String, _ message: String, fix: String) -> Finding {
        Finding(check: check, outcome: .failed, message: message, fix: fix)
    }

    var rendered: String {
        let line = "  [\(outcome.mark)] \(check): \(message)"
        return fix.map { line + "\n         fix: \($0)" } ?? line
    }
}

/// Every finding of one run.
struct DoctorReport: Sendable {
    var findings: [Finding] = []
    var hasFailures: Bool { findings.contains { $0.outcome == .failed } }
    var summary: String {
        func count(_ outcome: Finding.Outcome) -> Int { findings.filter { $0.outcome == outcome }.count }
        let warnings = count(.warning)
        return "\(count(.passed)) passed, \(warnings) warning\(warnings == 1 ? "" : "s"), \(count(.failed)) failed"
    }
    mutating func add(_ finding: Finding) { findings.append(finding) }
}
