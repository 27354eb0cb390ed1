import Crypto
import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
@testable import Latchkey
import LatchkeySDKTestSupport
import Testing

/// A JWKS endpoint: a scripted double answering every request with `set` (a later call replaces the set it serves;
/// its requests count the fetches).
@discardableResult
func serveJWKS(_ set: JWKSet, on http: ProgrammableHTTPClient = ProgrammableHTTPClient(upstream: nil)) throws -> ProgrammableHTTPClient {
    let body = try JSONEncoder().encode(set)
    http.answer(where: { _ in true }) { _ in HTTPResponse(status: 200, headers: [:], body: body) }
    return http
}

@Suite("ID-token validation: every rule has a negative test")
struct IDTokenValidatorTests {
    let key = try! SigningKey.generate(.rs256)
    let issuer = "https://id.example.com"
    let now = Date()

    func claims(_ change: (inout [String: JSONValue]) -> Void = { _ in }) -> [String: JSONValue] {
        var c: [String: JSONValue] = [
            "iss": .string(issuer), "sub": .string("u1"), "aud": .string("app"), "azp": .string("app"),
            "exp": .number(now.timeIntervalSince1970 + 300), "iat": .number(now.timeIntervalSince1970),
            "nonce": .string("n-1"), "at_hash": .string(Base64URL.encode(Data(SHA256.hash(data: Data("AT".utf8))).prefix(16))),
            "auth_time": .number(now.timeIntervalSince1970 - 10)
        ]
        change(&c)
        return c
    }

    func validator() throws -> (IDTokenValidator, ProgrammableHTTPClient) {
        let stub = try serveJWKS(JWKSet(keys: [key.publicJWK()]))
        return (IDTokenValidator(jwks: JWKSCache(url: URL(string: "https://id.example.com/jwks")!, http: stub, minimumRefetchInterval: 0)), stub)
    }

    func expect(_ token: String, nonce: String? = "n-1", maxAge: Int? = nil, fails reason: String) async throws {
        let (v, _) = try validator()
        await #expect {
            try await v.validate(token, .init(issuer: issuer, clientId: "app", nonce: nonce, accessToken: "AT", maxAge: maxAge, now: now))
        } throws: { error in
            let e = error as? LatchkeyError
            return e?.code == .invalidToken && e?.message.contains(reason) == true
        }
    }

    @Test func aValidTokenPasses() async throws {
        let (v, _) = try validator()
        let verified = try await v.validate(
            try key.sign(claims: claims()), .init(issuer: issuer, clientId: "app", nonce: "n-1", accessToken: "AT", maxAge: 60, now: now))
        #expect(verified["sub"]?.stringValue == "u1")
    }

    @Test func claimRules() async throws {
        try await expect(key.sign(claims: claims { $0["iss"] = .string("https://evil.example") }), fails: "iss")
        try await expect(key.sign(claims: claims { $0["aud"] = .string("other") }), fails: "aud")
        try await expect(
            key.sign(
                claims: claims {
                    $0["aud"] = .array([.string("app"), .string("other")]); $0["azp"] = .string("other")
                }), fails: "azp")
        try await expect(
            key.sign(
                claims: claims {
                    $0["aud"] = .array([.string("app"), .string("other")]); $0["azp"] = nil
                }), fails: "azp")
        try await expect(key.sign(claims: claims { $0["exp"] = .number(now.timeIntervalSince1970 - 120) }), fails: "expired")
        try await expect(key.sign(claims: claims { $0["iat"] = .number(now.timeIntervalSince1970 + 600) }), fails: "iat")
        try await expect(key.sign(claims: claims { $0["nbf"] = .number(now.timeIntervalSince1970 + 600) }), fails: "nbf")
        try await expect(key.sign(claims: claims { $0["nonce"] = .string("n-2") }), fails: "nonce")
        try await expect(key.sign(claims: claims { $0["nonce"] = nil }), fails: "nonce missing")
        try await expect(key.sign(claims: claims { $0["at_hash"] = .string("AAAAAAAAAAAAAAAAAAAAAA") }), fails: "at_hash")
        // An explicitly typed JWT of another kind is never an ID token, even with every claim right.
        try await expect(key.sign(claims: claims(), type: "at+jwt"), fails: "typ at+jwt")
        try await expect(key.sign(claims: claims(), type: "login-ticket+jwt"), fails: "typ login-ticket+jwt")
        try await expect(key.sign(claims: claims { $0["auth_time"] = .number(now.timeIntervalSince1970 - 3600) }), maxAge: 60, fails: "max_age")
        try await expect(key.sign(claims: claims { $0["sub"] = nil }), fails: "sub")
    }

    @Test func leewayToleratesSmallSkew() async throws {
        let (v, _) = try validator()
        let token = try key.sign(claims: claims { $0["exp"] = .number(now.timeIntervalSince1970 - 20) })
        _ = try await v.validate(token, .init(issuer: issuer, clientId: "app", nonce: "n-1", accessToken: "AT", leeway: 60, now: now))
    }

    @Test func algNoneAndHS256WithThePublicKeyAreRefused() async throws {
        let payload = Base64URL.encode(try JSONEncoder().encode(claims()))
        let none = Base64URL.encode(Data(#"{"alg":"none"}"#.utf8)) + "." + payload + "."
        try await expect(none, fails: "none")
        let header = Base64URL.encode(Data(#"{"alg":"HS256","kid":"\#(key.kid)"}"#.utf8))
        let secret = SymmetricKey(data: try JSONEncoder().encode(try key.publicJWK()))
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(header).\(payload)".utf8), using: secret)
        try await expect("\(header).\(payload).\(Base64URL.encode(Data(mac)))", fails: "HS256")
    }

    @Test func unknownKidRefetchesOnceThenFails() async throws {
        let stranger = try SigningKey.generate(.es256)
        let (v, stub) = try validator()
        await #expect(throws: LatchkeyError.self) {
            try await v.validate(
                try stranger.sign(claims: claims()), .init(issuer: issuer, clientId: "app", nonce: "n-1", accessToken: "AT", now: now))
        }
        #expect(stub.requests.count == 2, "initial fetch plus exactly one refetch")

        // After a real rotation the refetch finds the new key.
        try serveJWKS(JWKSet(keys: [try key.publicJWK(), try stranger.publicJWK()]), on: stub)
        _ = try await v.validate(
            try stranger.sign(claims: claims()), .init(issuer: issuer, clientId: "app", nonce: "n-1", accessToken: "AT", now: now))
        #expect(stub.requests.count == 3)
    }

    @Test func refetchesAreRateLimited() async throws {
        let stub = try serveJWKS(JWKSet(keys: [try key.publicJWK()]))
        // The limit is measured on the cache's clock, set and advanced here: however slow the machine, no time passes.
        let clock = Locked(Date(timeIntervalSince1970: 1_800_000_000))
        let cache = JWKSCache(
            url: URL(string: "https://id.example.com/jwks")!, http: stub, minimumRefetchInterval: 60, now: { clock.withLock { $0 } })
        let v = IDTokenValidator(jwks: cache)
        let stranger = try SigningKey.generate(.es256)
        func forge() async {
            _ = try? await v.validate(
                try stranger.sign(claims: claims()), .init(issuer: issuer, clientId: "app", nonce: "n-1", accessToken: "AT", now: now))
        }
        for _ in 0..<5 { await forge() }
        #expect(stub.requests.count == 2, "one refetch for the first unknown kid, then none: forged kids cannot hammer the JWKS endpoint")
        clock.withLock { $0 += 59 }
        await forge()
        #expect(stub.requests.count == 2, "59 s later: still within the limit")
        clock.withLock { $0 += 2 }
        await forge()
        await forge()
        #expect(stub.requests.count == 3, "61 s after the first refetch: one more, and again none after it")
    }

    @Test func tamperedSignatureFails() async throws {
        let token = try key.sign(claims: claims())
        let parts = token.split(separator: ".")
        let forged = "\(parts[0]).\(Base64URL.encode(try JSONEncoder().encode(claims { $0["sub"] = .string("admin") }))).\(parts[2])"
        try await expect(forged, fails: "signature")
    }
}
