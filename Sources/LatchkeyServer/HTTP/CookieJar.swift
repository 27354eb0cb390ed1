import Foundation
import Hummingbird

/// The server's cookies, with the attributes the security model needs.
struct CookiePolicy: Sendable {
    /// `Secure` is dropped only for a plain-http loopback development issuer (browsers would refuse to store it).
    let secure: Bool

    static let sessionCookie = "lk_session"
    static let csrfCookie = "lk_csrf"

    func session(_ value: String, maxAge: Int) -> String {
        cookie(Self.sessionCookie, value, maxAge: maxAge, sameSite: "Lax")
    }

    func clearSession() -> String { cookie(Self.sessionCookie, "", maxAge: 0, sameSite: "Lax") }

    /// Double-submit CSRF cookie for the hosted forms: `Strict`, so a cross-site POST never carries it.
    func csrf(_ value: String) -> String { cookie(Self.csrfCookie, value, maxAge: 3600, sameSite: "Strict") }

    /// The form has done its job once the login succeeded.
    func clearCSRF() -> String { cookie(Self.csrfCookie, "", maxAge: 0, sameSite: "Strict") }

    private func cookie(_ name: String, _ value: String, maxAge: Int, sameSite: String) -> String {
        "\(name)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=\(sameSite)\(secure ? "; Secure" : "")"
    }
}

extension Request {
    /// Reads one cookie from the `Cookie` header(s).
    func cookieValue(_ name: String) -> String? {
        for header in headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0] == name { return String(parts[1]) }
            }
        }
        return nil
    }
}
