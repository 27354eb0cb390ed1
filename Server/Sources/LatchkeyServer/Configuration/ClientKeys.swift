import Foundation
import LatchkeyJOSE

/// The public keys a `private_key_jwt` client registers (RFC 7591 `jwks`, a JWK Set of RFC 7517 §5), as the
/// configuration file and dynamic registration read them and as both check them.
///
/// Read strictly, from the JSON itself: the `JWK` type keeps only public members, so a private key pasted by mistake
/// (`d`, or RSA's `p`, `q` …) would otherwise be accepted silently, its private half dropped but exposed wherever the
/// file or the registration request went. A symmetric key (`kty: oct`, member `k`) is refused the same way: a client
/// assertion signed with a shared secret is `client_secret_jwt`, which this server does not offer.
enum ClientKeys {
    /// Every assertion without a `kid` may be tried against each key of its algorithm, so a set stays small.
    static let maximumKeys = 10
    /// Members that only a private or symmetric key has (RFC 7518 §6.2.2, §6.3.2, §6.4.1).
    static let privateMembers = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]
    /// The string members `JWK` keeps; any other member (`x5c`, `key_ops` …) is not used here.
    private static let stringMembers = ["kty", "kid", "use", "alg", "crv", "x", "y", "n", "e"]

    struct Refusal: Error, Sendable {
        /// Technical English naming the key (`keys[1]`) and what is wrong; never key material.
        let reason: String
    }

    /// `{"keys": [...]}` as a `JWKSet`: an object with a `keys` array of 1 to `maximumKeys` JSON objects, each with a
    /// string `kty`, string members where `JWK` has them, no private member, and `key_ops` (when present) allowing
    /// `verify`.
    static func parse(_ value: JSONValue) throws(Refusal) -> JWKSet {
        guard let object = value.objectValue, let list = object["keys"]?.arrayValue else {
            throw Refusal(reason: "must be a JWK Set, an object {\"keys\": [...]}")
        }
        guard !list.isEmpty, list.count <= maximumKeys else { throw Refusal(reason: "must hold 1 to \(maximumKeys) keys") }
        var keys: [JWK] = []
        for (index, element) in list.enumerated() {
            let name = "keys[\(index)]"
            guard let members = element.objectValue else { throw Refusal(reason: "\(name) is not a JSON object") }
            if let member = privateMembers.first(where: { members[$0] != nil }) {
                throw Refusal(reason: "\(name) has the private member \(member): register public keys only")
            }
            var strings: [String: String] = [:]
            for member in stringMembers {
                guard let present = members[member] else { continue }
                guard let text = present.stringValue else { throw Refusal(reason: "\(name).\(member) must be a string") }
                strings[member] = text
            }
            if let ops = members["key_ops"] {
                guard let names = ops.stringArray, case .array = ops else { throw Refusal(reason: "\(name).key_ops must be an array of strings") }
                guard names.contains("verify") else { throw Refusal(reason: "\(name).key_ops does not allow verify") }
            }
            guard let kty = strings["kty"] else { throw Refusal(reason: "\(name) has no kty") }
            keys.append(
                JWK(
                    kty: kty, kid: strings["kid"], use: strings["use"], alg: strings["alg"], crv: strings["crv"], x: strings["x"],
                    y: strings["y"], n: strings["n"], e: strings["e"]))
        }
        return JWKSet(keys: keys)
    }

    /// What a client's set must be to authenticate it: every key one this server can verify with (RSA of at least
    /// 2048 bits, EC P-256, OKP Ed25519, its `alg` when declared matching its material), no `kid` used twice, and at
    /// least one key for signatures (`use` absent or `sig`) of `algorithm`, or of any accepted algorithm when unset.
    static func check(_ set: JWKSet, algorithm: JWSAlgorithm?) throws(Refusal) {
        guard !set.keys.isEmpty, set.keys.count <= maximumKeys else { throw Refusal(reason: "must hold 1 to \(maximumKeys) keys") }
        var kids = Set<String>()
        var signing: [JWSAlgorithm] = []
        for (index, key) in set.keys.enumerated() {
            let name = "keys[\(index)]" + (key.kid.map { " (kid \(ClientMetadata.printable($0)))" } ?? "")
            let prepared: PreparedKey
            do { prepared = try PreparedKey(key) } catch {
                throw Refusal(reason: "\(name) cannot verify signatures here: \(error) (RSA of 2048 bits or more, EC P-256 or OKP Ed25519)")
            }
            if let kid = key.kid, !kids.insert(kid).inserted { throw Refusal(reason: "\(name): kid is used by another key") }
            if let use = key.use, use != "sig" && use != "enc" { throw Refusal(reason: "\(name): use must be sig or enc") }
            if key.use != "enc" { signing.append(prepared.algorithm) }
        }
        let wanted = algorithm.map { [$0] } ?? ClientAssertion.algorithms
        guard signing.contains(where: wanted.contains) else {
            throw Refusal(
                reason: "no key for signatures with \(wanted.map(\.rawValue).joined(separator: " or ")) (use absent or sig)")
        }
    }
}

extension ClientKeys {
    /// `check` with `client`'s settings: its `token_endpoint_auth_signing_alg`, and under the FAPI 2.0 profile no RSA
    /// key (RS256 assertions are not allowed; `ClientConfiguration.validateProfile`). For a set registered by value
    /// and for one fetched from a `jwks_uri` alike.
    static func check(_ set: JWKSet, for client: ClientConfiguration) throws(Refusal) {
        try check(set, algorithm: client.tokenEndpointAuthSigningAlg)
        if client.securityProfile == .fapi2, set.keys.contains(where: { $0.kty == "RSA" }) {
            throw Refusal(reason: "may hold only EC P-256 or Ed25519 keys under security_profile fapi2 (RS256 assertions are not allowed)")
        }
    }
}
