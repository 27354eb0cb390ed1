import Foundation
import Testing

@testable import Latchkey

/// Every token request the SDK sends, spelled once: each grant's parameters, names and order, for a public client.
@Suite("Token requests: one typed value per grant")
struct TokenGrantTests {
    static let cases: [(TokenGrant, [String])] = [
        (
            .authorizationCode(code: "c0de", redirectURI: "http://127.0.0.1:7777/callback", codeVerifier: "v3rifier"),
            [
                "grant_type=authorization_code", "code=c0de", "redirect_uri=http://127.0.0.1:7777/callback", "client_id=app",
                "code_verifier=v3rifier"
            ]
        ),
        (.refreshToken("r3fresh"), ["grant_type=refresh_token", "refresh_token=r3fresh", "client_id=app"]),
        (.deviceCode("d3vice"), ["grant_type=urn:ietf:params:oauth:grant-type:device_code", "device_code=d3vice", "client_id=app"]),
        (
            .tokenExchange(.init(subjectToken: "assertion", subjectTokenType: TokenGrant.jwtTokenType, scope: ["openid", "profile"])),
            [
                "grant_type=urn:ietf:params:oauth:grant-type:token-exchange", "client_id=app", "subject_token=assertion",
                "subject_token_type=urn:ietf:params:oauth:token-type:jwt", "scope=openid profile"
            ]
        ),
        (
            .tokenExchange(
                .init(
                    subjectToken: "at", subjectTokenType: "urn:ietf:params:oauth:token-type:access_token", audience: "https://api.example",
                    scope: ["api.read"], requestedTokenType: "urn:ietf:params:oauth:token-type:access_token")),
            [
                "grant_type=urn:ietf:params:oauth:grant-type:token-exchange", "client_id=app", "subject_token=at",
                "subject_token_type=urn:ietf:params:oauth:token-type:access_token", "audience=https://api.example", "scope=api.read",
                "requested_token_type=urn:ietf:params:oauth:token-type:access_token"
            ]
        ),
        (
            .tokenExchange(.init(subjectToken: "at", subjectTokenType: "urn:ietf:params:oauth:token-type:access_token")),
            [
                "grant_type=urn:ietf:params:oauth:grant-type:token-exchange", "client_id=app", "subject_token=at",
                "subject_token_type=urn:ietf:params:oauth:token-type:access_token"
            ]
        )
    ]

    @Test("each grant's parameters, in order, with the client's id and nothing else", arguments: 0..<cases.count)
    func parameters(_ index: Int) {
        let (grant, expected) = Self.cases[index]
        #expect(grant.parameters(clientId: "app").map { "\($0.0)=\($0.1)" } == expected)
    }

    @Test("no grant sends a client secret or repeats a parameter")
    func noSecretNoRepeats() {
        for (grant, _) in Self.cases {
            let names = grant.parameters(clientId: "app").map(\.0)
            #expect(!names.contains("client_secret") && Set(names).count == names.count, "\(grant)")
        }
    }
}
