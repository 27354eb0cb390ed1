import Crypto
import Foundation
import LatchkeyJOSE

/// Random secrets, their at-rest digests and constant-time comparison.
enum Secrets {
    /// 256 bits from the system CSPRNG, base64url: codes, refresh tokens, session cookies, CSRF tokens.
    static func token(bytes: Int = 32) -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<bytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// An opaque identifier (not a secret by itself): user ids, session ids, family ids, `jti`.
    static func identifier() -> String { token(bytes: 16) }

    /// SHA-256 of a high-entropy secret. Such secrets need no slow hash: guessing the input is as hard as the
    /// secret itself, and a database leak must not yield usable tokens.
    static func digest(_ secret: String) -> Data { Data(SHA256.hash(data: Data(secret.utf8))) }

    /// Compares without an early exit, so timing does not reveal how many leading bytes matched.
    static func constantTimeEquals(_ a: some DataProtocol, _ b: some DataProtocol) -> Bool {
        let x = Array(a), y = Array(b)
        var difference = UInt8(truncatingIfNeeded: x.count ^ y.count)
        for i in 0..<max(x.count, y.count) {
            difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return difference == 0
    }

    static func constantTimeEquals(_ a: String, _ b: String) -> Bool { constantTimeEquals(Data(a.utf8), Data(b.utf8)) }
}

/// PKCE (RFC 7636). Only S256 is accepted: `plain` offers no protection against a leaked authorization request.
enum PKCE {
    /// `code_verifier = 43*128unreserved` (RFC 7636 §4.1).
    static func isValidVerifier(_ verifier: String) -> Bool {
        (43...128).contains(verifier.utf8.count)
            && verifier.unicodeScalars.allSatisfy {
                ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) || "-._~".unicodeScalars.contains($0)
            }
    }

    /// A challenge is the base64url SHA-256 of a verifier: exactly 43 base64url characters.
    static func isValidChallenge(_ challenge: String) -> Bool {
        challenge.utf8.count == 43 && Base64URL.decode(challenge)?.count == 32
    }

    static func verify(verifier: String, challenge: String) -> Bool {
        guard isValidVerifier(verifier) else { return false }
        let computed = Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8))))
        return Secrets.constantTimeEquals(computed, challenge)
    }
}
