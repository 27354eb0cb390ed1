import Foundation
@testable import Latchkey
import Testing

/// What an app prints, interpolates or dumps by accident must not carry a token or the DPoP private key.
@Suite("Token sets, token answers, DPoP keys, provided credentials and enrollments print without their secrets")
struct SecretRedactionTests {
    @Test("no token and no private key in description, debugDescription or dump")
    func printedFormsHideSecrets() async throws {
        let provider = SoftwareDPoPKeyProvider()
        let key = try await provider.makeKey()
        let tokens = TokenSet(
            accessToken: "AT-secret-value", refreshToken: "RT-secret-value", idToken: "ID-secret-value",
            tokenType: "DPoP", expiresAt: Date(timeIntervalSince1970: 0), scope: "openid", nonce: "n",
            dpopKey: key.persistentReference)
        var answer = TokenResponse(
            accessToken: "AT-secret-value", tokenType: "Bearer", expiresIn: 60, refreshToken: "RT-secret-value",
            idToken: "ID-secret-value", scope: "openid", issuedTokenType: nil)
        answer.dpopKey = key.persistentReference
        for value in [tokens as Any, answer as Any, key as Any] {
            var dumped = ""
            dump(value, to: &dumped)
            for printed in ["\(value)", String(reflecting: value), dumped] {
                for secret in [
                    "AT-secret-value", "RT-secret-value", "ID-secret-value", "PRIVATE KEY", String(key.persistentReference.dropFirst(40).prefix(30))
                ] {
                    #expect(!printed.contains(secret), "\(secret) in \(printed)")
                }
            }
        }
        #expect("\(tokens)".contains("redacted"), "the shape is still there to debug with")
    }

    @Test("a provided credential and an authenticator enrollment print without the password, tokens, code or key")
    func credentialsAndEnrollmentsHideSecrets() throws {
        let uri = try #require(URL(string: "otpauth://totp/x:y?secret=TOTPKEYSECRETVALUE&issuer=x"))
        let values: [Any] = [
            ProvidedCredential.password(username: "ada", password: "PW-secret-value"),
            ProvidedCredential.appleID(identityToken: "ID-secret-value", givenName: "Ada", familyName: nil, authorizationCode: "AC-secret-value"),
            TOTPEnrollment(secret: "TOTPKEYSECRETVALUE", uri: uri, enrollment: "ENROLLMENT-secret-value", expiresAt: Date(timeIntervalSince1970: 0))
        ]
        for value in values {
            var dumped = ""
            dump(value, to: &dumped)
            for printed in ["\(value)", String(reflecting: value), dumped] {
                for secret in ["PW-secret-value", "ID-secret-value", "AC-secret-value", "TOTPKEYSECRETVALUE", "ENROLLMENT-secret-value"] {
                    #expect(!printed.contains(secret), "\(secret) in \(printed)")
                }
            }
        }
    }
}
