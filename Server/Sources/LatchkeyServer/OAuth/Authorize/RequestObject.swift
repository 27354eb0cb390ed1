import Foundation
import LatchkeyJOSE

/// Signed request objects (RFC 9101, OpenID Connect Core §6.1): the authorization request as a JWS the client signed
/// with one of its registered keys (`ClientConfiguration.jwks`, or those at its `jwksURI`), sent as `request` to the
/// authorization endpoint or to PAR, or published at one of the client's registered `request_uris` and named by
/// `request_uri` (`RequestObjectReference`). Its parameters are the request: those outside it are ignored but
/// `client_id` (RFC 9101 §5), which must match.
///
/// Accepted when: `typ` (when present) is `oauth-authz-req+jwt` or `JWT`; `alg` is one this server verifies (never
/// `none`: an unsigned object proves nothing a query string does not); the signature verifies with the client's keys;
/// `iss` and `client_id` are the client; `aud` names this server's issuer; `exp` is present and not past (60 s of
/// leeway), `nbf` not ahead, and the object valid for at most an hour. It may not nest another `request` or a
/// `request_uri`.
enum RequestObject {
    static let algorithms = ClientAssertion.algorithms
    static let maximumLifetimeSeconds: TimeInterval = 3600
    private static let registered: Set<String> = ["iss", "aud", "exp", "iat", "nbf", "jti"]

    static func parameters(
        _ text: String, client: ClientConfiguration, outerClientId: String?, issuer: String, now: Date, keys: ClientKeySets
    ) async throws(OAuthError) -> Parameters {
        func refuse(_ why: String) -> OAuthError { OAuthError(.invalidRequestObject, why) }
        let jws: CompactJWS
        let claims: [String: JSONValue]
        do {
            jws = try CompactJWS(parsing: text)
            claims = try jws.claims(as: [String: JSONValue].self)
        } catch {
            throw refuse("the request object is not a signed JWT (RFC 9101)")
        }
        if let typ = jws.header.typ?.lowercased(), typ != "oauth-authz-req+jwt", typ != "jwt" {
            throw refuse("the request object's typ must be oauth-authz-req+jwt")
        }
        guard let alg = JWSAlgorithm(rawValue: jws.header.alg), algorithms.contains(alg) else {
            throw refuse(
                "the request object's alg must be one of \(algorithms.map(\.rawValue).joined(separator: ", ")) (unsigned objects are refused)")
        }
        guard client.jwks != nil || client.jwksURI != nil else {
            throw refuse("the client has registered no keys (jwks or jwks_uri) to sign request objects with")
        }
        do { try await keys.verify(jws, client: client, now: now) } catch let unavailable as ClientKeySets.Unavailable {
            throw refuse("the client's keys could not be fetched from its jwks_uri: \(unavailable.reason)")
        } catch {
            throw refuse("the request object's signature does not verify with the client's keys")
        }
        guard claims["iss"]?.stringValue == client.clientId else { throw refuse("the request object's iss must be the client id") }
        guard claims["client_id"]?.stringValue == client.clientId, outerClientId == nil || outerClientId == client.clientId else {
            throw refuse("the request object's client_id must be the request's client_id")
        }
        guard claims["aud"]?.stringArray?.contains(issuer) == true else { throw refuse("the request object's aud must be the issuer") }
        let current = now.timeIntervalSince1970, skew = ClientAssertion.clockSkewSeconds
        guard let exp = claims["exp"]?.doubleValue, exp.isFinite else { throw refuse("the request object has no exp") }
        guard current <= exp + skew else { throw refuse("the request object has expired") }
        var start = current
        if let nbf = claims["nbf"] {
            guard let value = nbf.doubleValue, value <= current + skew else { throw refuse("the request object is not valid yet (nbf)") }
            start = value
        }
        guard exp - start <= maximumLifetimeSeconds else { throw refuse("the request object may be valid for at most an hour") }
        var values: [String: [String]] = [:]
        for (name, value) in claims where !registered.contains(name) {
            guard name != "request", name != "request_uri" else { throw refuse("a request object cannot carry \(name)") }
            switch value {
            case .string(let text): values[name] = [text]
            case .number(let number): values[name] = [number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)]
            case .bool(let flag): values[name] = [flag ? "true" : "false"]
            case .null: continue
            default:
                // `claims` is an object; OpenID Connect Core §6.1 carries it as JSON inside the object.
                guard let data = try? JSONEncoder().encode(value) else { throw refuse("the request object's \(name) cannot be read") }
                values[name] = [String(decoding: data, as: UTF8.self)]
            }
        }
        return Parameters(values)
    }
}
