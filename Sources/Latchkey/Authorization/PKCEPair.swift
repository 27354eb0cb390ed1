import Crypto
import Foundation

/// A PKCE verifier and its S256 challenge (RFC 7636). Every authorization request owns its own pair.
public struct PKCEPair: Sendable, Equatable {
    /// 64 characters from the unreserved set, 384 bits of entropy (RFC 7636 §4.1 asks for at least 256).
    public let verifier: String
    /// `base64url(SHA-256(verifier))`.
    public let challenge: String
    public var method: String { "S256" }

    public init() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<48).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        self.init(verifier: Base64URL.encode(bytes))
    }

    /// Derives the challenge for a known verifier (tests, vectors).
    public init(verifier: String) {
        self.verifier = verifier
        self.challenge = Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8))))
    }
}

extension PKCEPair: CustomStringConvertible {
    /// Never prints the verifier: it is a secret until the code is redeemed.
    public var description: String { "PKCEPair(challenge: \(challenge), method: S256)" }
}
