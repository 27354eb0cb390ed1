import Crypto
import Foundation
import LatchkeyJOSE

/// `private_key_jwt` client authentication (RFC 7523 §2.2 and §3, OpenID Connect Core §9): the client sends
/// `client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer` and `client_assertion`, a JWS it
/// signed with one of the keys it registered (`ClientConfiguration.jwks`, or those at its `jwksURI`: `ClientKeySets`).
///
/// An assertion is accepted when, in this order: its `typ` (when present) is `JWT` or `client-authentication+jwt`;
/// its `alg` is one this server verifies (`algorithms`: never `none` or HMAC) and, when the client registered
/// `token_endpoint_auth_signing_alg`, that one; its signature verifies with the key its `kid` names, or without `kid`
/// with one of the keys of that algorithm; `iss` and `sub` are both the client id; `aud` names this server (its
/// issuer, or the URL of one of its endpoints that authenticate clients: `acceptedAudiences`; for a FAPI 2.0
/// application the issuer as a single string, nothing else); `exp` is present and
/// not past (`clockSkewSeconds` of leeway); `iat` and `nbf`, when present, are not ahead of the server's clock by more
/// than that leeway; the assertion is valid for at most `maximumLifetimeSeconds` (from `iat`, else from now); and its
/// `jti` has not been seen before (`SingleUseStore.consumeTokenId`, kept until `exp` plus the leeway, so an assertion
/// is usable exactly once on every instance sharing the store).
enum ClientAssertion {
    /// RFC 7523 §2.2.
    static let type = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    /// What `LatchkeyJOSE` verifies. PS256 is not among them (neither signed nor verified here), nor the HMAC family
    /// (`client_secret_jwt`, a shared secret by another name); `none` does not exist.
    static let algorithms: [JWSAlgorithm] = [.es256, .rs256, .edDSA]
    static var algorithmNames: [String] { algorithms.map(\.rawValue) }
    /// How far the client's clock may be from the server's, in either direction.
    static let clockSkewSeconds: TimeInterval = 60
    /// The longest an assertion may be valid (`exp` - `iat`, or `exp` - now without `iat`). An assertion is made for
    /// one request; one valid for a day would be a bearer credential for a day if it leaked.
    static let maximumLifetimeSeconds: TimeInterval = 3600
    static let maximumJTIBytes = 256
    /// The endpoints under `{issuer}/oauth2/` that authenticate clients; each one's URL is an accepted audience.
    static let authenticatingEndpoints = ["token", "revoke", "introspect", "par", "device_authorization"]

    /// Why an assertion was refused: the audit reason (`ClientAuthFailure`) and the `error_description`.
    struct Failure: Error, Sendable {
        let reason: ClientAuthFailure
        let description: String
        init(_ reason: ClientAuthFailure, _ description: String) {
            self.reason = reason
            self.description = description
        }
    }

    /// The audiences that name this server: the issuer (FAPI 2.0 Security Profile §5.3.2.1 asks clients for it), the
    /// URLs of the endpoints that authenticate clients (OpenID Connect Core §9 and the conformance suite use the
    /// token endpoint's) and the URL the request was sent to (the reachFive mount's `/oauth/token`).
    static func acceptedAudiences(issuer: String, requestPath: String) -> Set<String> {
        Set([issuer, issuer + requestPath] + authenticatingEndpoints.map { issuer + "/oauth2/" + $0 })
    }

    /// Checks `jws` (already parsed, its claims read strictly into `claims`) as `client`'s assertion at `now`, and
    /// spends its `jti`. Throws `Failure` for a refused assertion and `StoreError` when the `jti` cannot be recorded.
    static func verify(
        _ jws: CompactJWS, claims: [String: JSONValue], client: ClientConfiguration, issuer: String, audiences: Set<String>, now: Date,
        store: any SingleUseStore, keys: ClientKeySets
    ) async throws {
        try await verifySignature(jws, client: client, keys: keys, now: now)
        let clientId = client.clientId
        guard claims["iss"]?.stringValue == clientId else {
            throw Failure(.assertionClaims, "the client assertion's iss must be the client id")
        }
        guard claims["sub"]?.stringValue == clientId else {
            throw Failure(.assertionClaims, "the client assertion's sub must be the client id")
        }
        if client.securityProfile == .fapi2 {
            // FAPI 2.0 Security Profile §5.3.2.1 item 8: the issuer identifier as a single string, nothing else (an
            // endpoint's URL, or an array, could be meant for another server sharing that path).
            guard case .string(let aud)? = claims["aud"], aud == issuer else {
                throw Failure(.assertionClaims, "the client assertion's aud must be this server's issuer identifier, as a single string (FAPI 2.0)")
            }
        } else {
            guard let aud = claims["aud"]?.stringArray, aud.contains(where: audiences.contains) else {
                throw Failure(
                    .assertionClaims, "the client assertion's aud must name this server: its issuer or its token endpoint URL")
            }
        }
        let current = now.timeIntervalSince1970
        let skew = clockSkewSeconds
        guard let exp = claims["exp"]?.doubleValue, exp.isFinite else {
            throw Failure(.assertionClaims, "the client assertion has no exp")
        }
        guard current <= exp + skew else { throw Failure(.assertionExpired, "the client assertion has expired (exp)") }
        var issuedAt = current
        if let value = claims["iat"] {
            guard let iat = value.doubleValue, iat.isFinite, iat <= current + skew else {
                throw Failure(.assertionClaims, "the client assertion's iat must be a time no more than \(Int(skew)) s ahead")
            }
            issuedAt = iat
        }
        if let value = claims["nbf"] {
            guard let nbf = value.doubleValue, nbf.isFinite, nbf <= current + skew else {
                throw Failure(.assertionClaims, "the client assertion is not valid yet (nbf)")
            }
        }
        guard exp - issuedAt <= maximumLifetimeSeconds else {
            throw Failure(
                .assertionClaims,
                "the client assertion is valid for longer than \(Int(maximumLifetimeSeconds)) s (exp - iat): make one per request")
        }
        guard let jti = claims["jti"]?.stringValue, !jti.isEmpty, jti.utf8.count <= maximumJTIBytes else {
            throw Failure(.assertionClaims, "the client assertion needs a jti (at most \(maximumJTIBytes) bytes)")
        }
        // Single use (RFC 7523 §3 item 7), in the store so it holds across instances; remembered as long as the
        // assertion could be accepted.
        let fresh = try await store.consumeTokenId(replayKey(clientId: clientId, jti: jti), expiresAt: Date(timeIntervalSince1970: exp + skew))
        guard fresh else { throw Failure(.assertionReplayed, "the client assertion was already used (jti)") }
    }

    /// `typ`, `alg` and the signature, with the client's registered keys (fetched from its `jwks_uri` when it
    /// registered them so: `keysUnavailable` when they cannot be).
    private static func verifySignature(_ jws: CompactJWS, client: ClientConfiguration, keys: ClientKeySets, now: Date) async throws(Failure) {
        if let typ = jws.header.typ {
            let normalized = typ.lowercased().hasPrefix("application/") ? String(typ.lowercased().dropFirst(12)) : typ.lowercased()
            guard normalized == "jwt" || normalized == "client-authentication+jwt" else {
                throw Failure(.assertionSignature, "the client assertion's typ must be JWT or client-authentication+jwt")
            }
        }
        let allowed = client.tokenEndpointAuthSigningAlg.map { [$0] } ?? algorithms
        guard let alg = JWSAlgorithm(rawValue: jws.header.alg), allowed.contains(alg) else {
            throw Failure(
                .assertionSignature,
                "the client assertion's alg \(ClientMetadata.printable(jws.header.alg)) is not accepted (\(allowed.map(\.rawValue).joined(separator: ", ")))"
            )
        }
        guard client.jwks != nil || client.jwksURI != nil else { throw Failure(.assertionSignature, "the client has no registered keys") }
        do { try await keys.verify(jws, client: client, now: now) } catch let unavailable as ClientKeySets.Unavailable {
            throw Failure(.keysUnavailable, "the client's keys could not be fetched from its jwks_uri: \(unavailable.reason)")
        } catch JOSEError.noMatchingKey {
            throw Failure(.assertionSignature, "no registered key of the client matches the client assertion's kid and alg")
        } catch JOSEError.algorithmMismatch {
            throw Failure(.assertionSignature, "the registered key the client assertion's kid names is not for its alg")
        } catch {
            throw Failure(.assertionSignature, "the client assertion's signature does not verify with the client's registered keys")
        }
    }

    /// The consumed-id record of an assertion: per client (two clients may pick the same `jti`), of bounded length.
    static func replayKey(clientId: String, jti: String) -> String {
        let material = "\(clientId.utf8.count):\(clientId):\(jti)"
        return "client-assertion:" + Base64URL.encode(Data(SHA256.hash(data: Data(material.utf8))))
    }
}
