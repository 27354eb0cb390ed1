import Foundation
@testable import Latchkey
import Testing

@Suite("originWebAuthn and ReachFive ApiError mapping")
struct PasskeyErrorsAndOriginTests {
    func client(baseUrl: String = "https://id.example.com/tenant", originWebAuthn: String? = nil) async throws -> LatchkeyClient {
        let client = LatchkeyClient(http: ScriptedIdentityServer().http)
        var config = LatchkeyConfig(baseUrl: baseUrl, clientId: "app")
        config.originWebAuthn = originWebAuthn
        try await client.initialize(config: config)
        return client
    }

    @Test(arguments: [
        ("https://example.com", "https://example.com"),
        ("https://example.com/", "https://example.com"),
        ("HTTPS://Login.Example.COM:443", "https://login.example.com"),
        ("https://example.com:8443", "https://example.com:8443"),
        ("http://localhost:8090", "http://localhost:8090"),
        ("http://localhost:80", "http://localhost"),
        ("http://127.0.0.1:3000", "http://127.0.0.1:3000"),
        ("http://[::1]:8090", "http://[::1]:8090")
    ])
    func acceptedOrigins(_ input: String, _ expected: String) async throws {
        #expect(try await client().originWebAuthn(overriddenBy: input) == expected)
    }

    @Test(arguments: [
        "", "example.com", "ftp://example.com", "http://example.com", "https://", "https://example.com/path", "https://example.com?x=1",
        "https://example.com#frag", "https://user:pw@example.com", "https://exa mple.com", "android:apk-key-hash:abc", "https://example.com:0"
    ])
    func rejectedOrigins(_ input: String) async throws {
        let client = try await client()
        #expect { try client.originWebAuthn(overriddenBy: input) } throws: { ($0 as? LatchkeyError)?.code == .invalidConfiguration }
    }

    @Test func originDefaultsToTheConfigurationThenTheIssuer() async throws {
        #expect(try await client().originWebAuthn() == "https://id.example.com")
        #expect(try await client(originWebAuthn: "https://app.example.com").originWebAuthn() == "https://app.example.com")
        #expect(try await client(baseUrl: "http://localhost:8090").originWebAuthn() == "http://localhost:8090")
        #expect { try LatchkeyClient().originWebAuthn() } throws: { ($0 as? LatchkeyError)?.code == .sdkNotInitialized }
    }

    static func apiError(_ status: Int, key: String?, error: String = "invalid_request") -> HTTPResponse {
        let keyMember = key.map { #","error_message_key":"\#($0)""# } ?? ""
        return HTTPResponse(
            status: status, headers: [:],
            body: Data(
                #"""
                {"error":"\#(error)","error_id":"e-1","error_user_msg":"Something went wrong","error_description":"technical detail"\#(keyMember),
                 "error_details":[{"field":"email","message":"taken","code":"email.taken"}]}
                """#.utf8))
    }

    static let mappings: [(Int, String?, LatchkeyError.Code, LatchkeyError.Category)] = [
        (400, "signup.identifier_taken", .userAlreadyExists, .requestError),
        (401, "login.invalid_credentials", .authenticationFailed, .authFailure),
        (403, "login.locked", .userAccountLocked, .technicalError),
        (403, "login.disabled", .userAccountDisabled, .technicalError),
        (429, "login.throttled", .authenticationFailed, .technicalError),
        (400, "passkey.failed", .passkeyFailed, .requestError),
        (400, "passkey.expired", .passkeyFailed, .requestError),
        (401, "passkey.unknown", .passkeyNoCredential, .authFailure),
        (400, "passkey.registration_failed", .passkeyFailed, .requestError),
        (409, "passkey.already_registered", .passkeyFailed, .technicalError),
        (404, "passkey.not_found", .passkeyNoCredential, .technicalError),
        (400, "passkey.none", .passkeyNoCredential, .requestError),
        (401, "apple.failed", .authenticationFailed, .authFailure),
        (401, "apple.expired", .authenticationFailed, .authFailure),
        (400, nil, .invalidInput, .requestError),
        (401, nil, .authenticationFailed, .authFailure),
        (500, nil, .serverError, .technicalError)
    ]

    @Test(arguments: mappings)
    func apiErrorBodiesMapToSeedCodes(_ status: Int, _ key: String?, _ code: LatchkeyError.Code, _ category: LatchkeyError.Category) {
        let error = IdentityErrorMapping.error(from: Self.apiError(status, key: key))
        #expect(error.code == code)
        #expect(error.category == category)
        #expect(error.statusCode == status)
        #expect(error.serverCode == key ?? "invalid_request")
        #expect(error.apiError?.errorId == "e-1" && error.apiError?.errorMessageKey == key)
        #expect(error.apiError?.errorDetails == [.init(field: "email", message: "taken", code: "email.taken")])
        #expect(error.errorUserMsg == "Something went wrong")
    }

    @Test func nonApiErrorBodiesStillGetAStatusCategory() {
        let error = IdentityErrorMapping.error(from: HTTPResponse(status: 502, headers: [:], body: Data("<html>".utf8)))
        #expect(error.code == .serverError && error.category == .technicalError && error.statusCode == 502)
    }

    @Test func passkeyCodesHaveReachFiveCategories() {
        #expect(LatchkeyError(.passkeyCanceled, "x").category == .authCanceled)
        #expect(LatchkeyError(.passkeyNoCredential, "x").category == .authFailure)
        #expect(LatchkeyError(.passkeyFailed, "x").category == .authFailure)
        #expect(LatchkeyError(.passkeyNotSupported, "x").category == .technicalError)
        #expect(LatchkeyError.Code.passkeyNoCredential.rawValue == "PASSKEY_NO_CREDENTIAL")
        #expect(FlowErrorMapping.code("FET-1016", flowType: .authentication) == .passkeyNoCredential)
        #expect(FlowErrorMapping.code("FET-1019", flowType: .authentication) == .passkeyFailed)
    }

    @Test func secretsStayOutOfDescriptions() {
        #expect(!"\(ProvidedCredential.password(username: "ada", password: "hunter2"))".contains("hunter2"))
        #expect(!"\(ProvidedCredential.appleID(identityToken: "eyJ.secret", givenName: nil, familyName: nil))".contains("secret"))
        #expect(!"\(MfaStepUp(token: "step-secret", amr: ["email"]))".contains("step-secret"))
        #expect(!"\(SoftwareCredentialProvider.SavedPassword(username: "ada", password: "hunter2"))".contains("hunter2"))
    }

    @Test func profileWireOmitsNilMembers() {
        let profile = ProfilePasskeySignupRequest(
            email: "a@b.c", phoneNumber: "+331", customIdentifier: "c1", middleName: "M", birthdate: "1815-12-10")
        #expect(
            profile.wire
                == .object([
                    "email": .string("a@b.c"), "phone_number": .string("+331"), "custom_identifier": .string("c1"),
                    "middle_name": .string("M"), "birthdate": .string("1815-12-10")
                ]))
    }
}
