import Foundation
import Latchkey
import LatchkeyServer

/// Compact JWS and JWK Sets through LatchkeyJOSE's public API (shared by the SDK and the server), plus what the server
/// reads from a JWS on its own.
enum JOSEHarness {
    static func jws(_ data: Data) {
        let token = String(decoding: data, as: UTF8.self)
        LatchkeyServerFuzzEntryPoints.jws(token)
        guard let jws = try? CompactJWS(parsing: token) else { return }
        let algorithm = try? jws.algorithm()
        _ = try? jws.claims(as: [String: JSONValue].self)
        _ = try? jws.verify(with: Fixtures.keySet)
        // A DPoP proof carries its own key: the key checks its own algorithm and the signature.
        if let jwk = jws.header.jwk {
            _ = jwk.thumbprint()
            if let algorithm { _ = try? jwk.verify(signature: jws.signature, for: jws.signingInput, algorithm: algorithm) }
        }
    }

    /// LatchkeyJOSE's own JSON reader (claims, JWS headers), checked against Foundation's: a text both accept must
    /// give the same value. (The reader is stricter by design: duplicate members, lone surrogates, depth over 64.)
    static func json(_ data: Data) {
        let parsed = try? JSONValue.parse(data)
        _ = try? JSONValue.parseObject(data)
        _ = try? JSONValue.parse(data, maxDepth: 2)
        guard let parsed, let foundation = try? JSONDecoder().decode(JSONValue.self, from: data) else { return }
        guard parsed == foundation else {
            fatalError("JSONValue.parse and JSONDecoder disagree: \(parsed) vs \(foundation)")
        }
    }

    static func jwks(_ data: Data) {
        guard let set = try? JSONDecoder().decode(JWKSet.self, from: data) else { return }
        for key in set.keys.prefix(16) {
            _ = try? key.keyAlgorithm()
            _ = key.thumbprint()
        }
        for token in Fixtures.signedTokens {
            _ = try? token.verify(with: set)
            if let algorithm = try? token.algorithm() {
                for key in set.candidates(kid: nil, algorithm: algorithm).prefix(16) {
                    _ = try? key.verify(signature: token.signature, for: token.signingInput, algorithm: algorithm)
                }
            }
        }
        _ = try? JSONEncoder().encode(set)
    }
}
