import Latchkey

/// `latchkey logout`'s account of a sign-out, in plain words: what was ended at the provider and what was not, and
/// what that leaves valid.
enum SignOutWording {
    static func lines(_ report: SignOutReport) -> [String] {
        [
            line("refresh token", report.refreshToken, done: "revoked at the provider"),
            line("access token", report.accessToken, done: "revoked at the provider"),
            line("provider session", report.providerSession, done: "ended at the provider")
        ]
    }

    private static func line(_ what: String, _ step: SignOutReport.Step, done: String) -> String {
        switch step {
        case .done: "  \(what): \(done)"
        case .notNeeded(let why): "  \(what): nothing to end (\(why))"
        case .unsupported(let why): "  \(what): NOT ended — \(why)"
        case .failed(let why): "  \(what): NOT ended — \(why)"
        case .unconfirmed(let why): "  \(what): perhaps not ended — \(why)"
        }
    }
}
