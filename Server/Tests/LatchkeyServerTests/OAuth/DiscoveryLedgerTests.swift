import Foundation
import LatchkeyTestSupport
import Testing

/// The Config OP plan reads the discovery document and holds the provider to every member it advertises. This ledger
/// names each member and the suites that exercise what it promises; a member added to or dropped from the document
/// without a line here fails, and every advertised endpoint must answer at its address (never 404).
@Suite("Discovery: every advertised member is accounted for")
struct DiscoveryLedgerTests {
    static let ledger: [String: String] = [
        "issuer": "DiscoveryTests", "authorization_endpoint": "AuthorizationCodeFlowTests", "token_endpoint": "TokenEndpointTests",
        "userinfo_endpoint": "SignedUserInfoTests, OIDCCoreTests", "jwks_uri": "DiscoveryTests",
        "revocation_endpoint": "RevocationAndIntrospectionTests", "introspection_endpoint": "RevocationAndIntrospectionTests",
        "end_session_endpoint": "EndSessionTests, LogoutChannelsTests", "scopes_supported": "AuthorizationCodeFlowTests",
        "response_types_supported": "AuthorizationCodeFlowTests", "response_modes_supported": "FormPostTests, test_logout_browser.py",
        "grant_types_supported": "TokenEndpointTests, DeviceAuthorizationTests", "subject_types_supported": "DiscoveryTests",
        "id_token_signing_alg_values_supported": "TokenEndpointTests", "userinfo_signing_alg_values_supported": "SignedUserInfoTests",
        "token_endpoint_auth_methods_supported": "PrivateKeyJWTTests", "revocation_endpoint_auth_methods_supported": "PrivateKeyJWTTests",
        "introspection_endpoint_auth_methods_supported": "PrivateKeyJWTTests",
        "token_endpoint_auth_signing_alg_values_supported": "PrivateKeyJWTTests",
        "revocation_endpoint_auth_signing_alg_values_supported": "PrivateKeyJWTTests",
        "introspection_endpoint_auth_signing_alg_values_supported": "PrivateKeyJWTTests",
        "code_challenge_methods_supported": "AuthorizationCodeFlowTests", "claims_supported": "ClaimsParameterTests",
        "acr_values_supported": "ClaimsParameterTests", "prompt_values_supported": "AuthorizationCodeFlowTests",
        "ui_locales_supported": "Localization", "authorization_response_iss_parameter_supported": "AuthorizationCodeFlowTests",
        "request_parameter_supported": "RequestObjectTests", "request_object_signing_alg_values_supported": "RequestObjectTests",
        "request_uri_parameter_supported": "RequestURITests", "require_request_uri_registration": "RequestURITests",
        "claims_parameter_supported": "ClaimsParameterTests", "frontchannel_logout_supported": "LogoutChannelsTests",
        "frontchannel_logout_session_supported": "LogoutChannelsTests", "backchannel_logout_supported": "LogoutChannelsTests",
        "backchannel_logout_session_supported": "LogoutChannelsTests", "dpop_signing_alg_values_supported": "DPoP",
        "pushed_authorization_request_endpoint": "PushedAuthorizationTests", "device_authorization_endpoint": "DeviceAuthorizationTests",
        "registration_endpoint": "ClientRegistrationTests"
    ]

    @Test("oidcc-discovery: the document holds exactly the ledger's members, and each endpoint answers")
    func everyMemberIsAccountedFor() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let document = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
        #expect(
            Set(document.keys) == Set(Self.ledger.keys),
            "added: \(Set(document.keys).subtracting(Self.ledger.keys)), dropped: \(Set(Self.ledger.keys).subtracting(document.keys))")
        for (member, value) in document where member.hasSuffix("_endpoint") || member == "jwks_uri" {
            let url = try #require(value as? String)
            #expect(url.hasPrefix(server.issuer + "/"), "\(member) is on the issuer")
            let path = String(url.dropFirst(server.issuer.count))
            let get = try await TestBrowser().get(server.base + path)
            let post = try await TestBrowser().postForm(server.base + path, [:])
            #expect(get.status != 404 && post.status != 404, "\(member) answers at \(path): GET \(get.status), POST \(post.status)")
            for answer in [get, post] where answer.status == 405 {
                #expect(answer.header("Allow") == "GET" || answer.header("Allow") == "POST", "\(member): 405 says what is allowed")
            }
        }
        for (member, value) in document where member.hasSuffix("_supported") {
            if let flag = value as? Bool {
                #expect(flag, "\(member): a false flag is the default; advertising it says nothing")
            } else {
                #expect((value as? [Any])?.isEmpty == false, "\(member) lists something")
            }
        }
    }
}
