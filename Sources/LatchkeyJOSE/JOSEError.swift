/// Why a JOSE object was refused. Messages never include the token itself.
public enum JOSEError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    case unsupportedAlgorithm(String)
    case algorithmMismatch(header: String, key: String)
    case invalidKey(String)
    case badSignature
    case noMatchingKey(kid: String?)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed JWS: \(why)"
        case .unsupportedAlgorithm(let alg): "unsupported or forbidden JWS algorithm \"\(alg)\""
        case .algorithmMismatch(let header, let key): "JWS header alg \(header) does not match the key (\(key))"
        case .invalidKey(let why): "invalid JWK: \(why)"
        case .badSignature: "JWS signature is not valid"
        case .noMatchingKey(let kid): "no key in the JWKS matches kid \(kid.map { "\"\($0)\"" } ?? "(none)")"
        }
    }
}
