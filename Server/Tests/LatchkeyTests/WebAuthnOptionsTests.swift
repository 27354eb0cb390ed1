import Foundation
@testable import Latchkey
import Testing

@Suite("WebAuthn options: ReachFive snake_case and W3C/thunderID camelCase")
struct WebAuthnOptionsTests {
    static let reachFiveRegistration = """
        {"friendly_name":"Ada's phone","options":{"public_key":{
          "rp":{"id":"example.com","name":"Example"},
          "user":{"id":"dXNlci0x","name":"ada@example.com","display_name":"Ada Lovelace"},
          "challenge":"Y2hhbGxlbmdlLTEyMzQ","pub_key_cred_params":[{"alg":-7,"type":"public-key"},{"alg":-257,"type":"public-key"}],
          "timeout":60000,"exclude_credentials":[{"type":"public-key","id":"AQID","transports":["internal"]}],
          "authenticator_selection":{"authenticator_attachment":"platform","require_resident_key":true,"resident_key":"required","user_verification":"preferred"},
          "attestation":"none"}}}
        """

    @Test func reachFiveRegistrationOptions() throws {
        let parsed = try RegistrationOptions(json: Data(Self.reachFiveRegistration.utf8))
        #expect(parsed.friendlyName == "Ada's phone")
        let o = parsed.options
        #expect(o.rp == PublicKeyCredentialRpEntity(id: "example.com", name: "Example"))
        #expect(o.user.id == Data("user-1".utf8))
        #expect(o.user.encodedId == "dXNlci0x")
        #expect(o.user.displayName == "Ada Lovelace")
        #expect(o.challenge == Data("challenge-1234".utf8))
        #expect(o.pubKeyCredParams == [.init(alg: -7), .init(alg: -257)])
        #expect(o.timeout == 60000)
        #expect(o.excludeCredentials == [PublicKeyCredentialDescriptor(id: Data([1, 2, 3]), transports: ["internal"])])
        #expect(
            o.authenticatorSelection
                == AuthenticatorSelectionCriteria(
                    authenticatorAttachment: "platform", requireResidentKey: true,
                    residentKey: "required", userVerification: "preferred"))
        #expect(o.attestation == "none")
    }

    @Test func reachFiveRequestOptions() throws {
        let json =
            #"{"public_key":{"challenge":"AAEC","timeout":30000,"rp_id":"example.com","allow_credentials":[{"type":"public-key","id":"BAUG"}],"user_verification":"required"}}"#
        let o = try PublicKeyCredentialRequestOptions(json: Data(json.utf8), style: .reachFive)
        #expect(
            o
                == PublicKeyCredentialRequestOptions(
                    challenge: Data([0, 1, 2]), timeout: 30000, rpId: "example.com",
                    allowCredentials: [.init(id: Data([4, 5, 6]))], userVerification: "required"))
    }

    @Test func thunderIDPasskeyChallengeBareAndWrapped() throws {
        let bare =
            #"{"challenge":"AAEC","timeout":60000,"rpId":"example.com","allowCredentials":[{"type":"public-key","id":"BAUG"}],"userVerification":"preferred"}"#
        let a = try PublicKeyCredentialRequestOptions(jsonString: bare)
        let b = try PublicKeyCredentialRequestOptions(jsonString: #"{"publicKey":"# + bare + "}")
        #expect(a == b)
        #expect(a.rpId == "example.com" && a.allowCredentials.map(\.id) == [Data([4, 5, 6])] && a.userVerification == "preferred")
    }

    @Test func thunderIDCreationOptionsBareAndWrapped() throws {
        let bare = """
            {"challenge":"AAEC","rp":{"id":"example.com","name":"Example"},"user":{"id":"dXNlci0x","name":"ada","displayName":"Ada"},
             "pubKeyCredParams":[{"type":"public-key","alg":-7}],"authenticatorSelection":{"residentKey":"preferred","userVerification":"required"},
             "timeout":120000,"excludeCredentials":[{"type":"public-key","id":"AQID"}],"attestation":"direct","extensions":{"credProps":true}}
            """
        let a = try PublicKeyCredentialCreationOptions(jsonString: bare)
        let b = try PublicKeyCredentialCreationOptions(jsonString: #"{"publicKey":"# + bare + "}")
        #expect(a == b)
        #expect(a.user.displayName == "Ada" && a.authenticatorSelection?.residentKey == "preferred" && a.attestation == "direct")
        #expect(a.excludeCredentials.map(\.id) == [Data([1, 2, 3])])
    }

    @Test func snakeCaseMembersAreNotReadAsCamelCase() throws {
        // A W3C parser must not silently accept the other dialect's member names (and vice versa).
        let snake = #"{"challenge":"AAEC","rp_id":"example.com","allow_credentials":[{"type":"public-key","id":"BAUG"}]}"#
        let o = try PublicKeyCredentialRequestOptions(jsonString: snake, style: .w3c)
        #expect(o.rpId == nil && o.allowCredentials.isEmpty)
    }

    @Test(arguments: [
        (#"[]"#, "not a JSON object"),
        (#"{"public_key":{"rp_id":"example.com"}}"#, "challenge is missing"),
        (#"{"public_key":{"challenge":"AA=="}}"#, "challenge is not unpadded base64url"),
        (#"{"public_key":{"challenge":"a+b/"}}"#, "challenge is not unpadded base64url"),
        (#"{"public_key":{"challenge":7}}"#, "challenge is not a string"),
        (#"{"public_key":{"challenge":"AAEC","timeout":"soon"}}"#, "timeout is not a non-negative integer"),
        (#"{"public_key":{"challenge":"AAEC","allow_credentials":[{"type":"public-key"}]}}"#, "allow_credentials[0] has no id"),
        (#"{"public_key":{"challenge":"AAEC","allow_credentials":{}}}"#, "allow_credentials is not an array")
    ])
    func malformedRequestOptionsSayWhatIsWrong(_ json: String, _ reason: String) {
        #expect {
            try PublicKeyCredentialRequestOptions(json: Data(json.utf8), style: .reachFive)
        } throws: { error in
            let e = error as? LatchkeyError
            return e?.code == .invalidInput && e?.message.contains(reason) == true
        }
    }

    @Test(arguments: [
        (
            #"{"options":{"public_key":{"user":{"id":"AQ","name":"a","display_name":"A"},"challenge":"AAEC","pub_key_cred_params":[]}}}"#,
            "rp is missing"
        ),
        (#"{"options":{"public_key":{"rp":{"id":"x"},"challenge":"AAEC","pub_key_cred_params":[]}}}"#, "user is missing"),
        (#"{"options":{"public_key":{"rp":{"id":"x"},"user":{"id":"","name":"a"},"challenge":"AAEC","pub_key_cred_params":[]}}}"#, "user.id"),
        (#"{"options":{"public_key":{"rp":{"id":"x"},"user":{"id":"AQ","name":"a"},"challenge":"AAEC"}}}"#, "pub_key_cred_params is missing"),
        (
            #"{"options":{"public_key":{"rp":{"id":"x"},"user":{"id":"AQ","name":"a"},"challenge":"AAEC","pub_key_cred_params":[{"type":"public-key"}]}}}"#,
            "pub_key_cred_params[0] needs a numeric alg"
        )
    ])
    func malformedCreationOptionsSayWhatIsWrong(_ json: String, _ reason: String) {
        #expect {
            try RegistrationOptions(json: Data(json.utf8))
        } throws: { error in
            let e = error as? LatchkeyError
            return e?.code == .invalidInput && e?.message.contains(reason) == true
        }
    }

    @Test func credentialsEncodeBothWireShapes() throws {
        let assertion = AssertionCredential(
            rawId: Data([1, 2, 3]), clientDataJSON: Data("{}".utf8), authenticatorData: Data([9]),
            signature: Data([8]), userHandle: nil)
        guard case .object(let r5) = assertion.reachFiveJSON, case .object(let response)? = r5["response"] else { Issue.record("shape"); return }
        #expect(r5["id"] == .string("AQID") && r5["raw_id"] == .string("AQID") && r5["type"] == .string("public-key"))
        #expect(response["user_handle"] == nil && response["client_data_json"] == .string("e30") && response["authenticator_data"] == .string("CQ"))
        let registration = RegistrationCredential(
            rawId: Data([1, 2, 3]), clientDataJSON: Data("{}".utf8), attestationObject: Data([0xA0]),
            transports: ["internal"], authenticatorAttachment: "platform")
        guard case .object(let w3c) = registration.w3cJSON, case .object(let wr)? = w3c["response"] else { Issue.record("shape"); return }
        #expect(
            w3c["rawId"] == .string("AQID") && w3c["clientExtensionResults"] == .object([:]) && w3c["authenticatorAttachment"] == .string("platform"))
        #expect(
            wr["attestationObject"] == .string("oA") && wr["clientDataJSON"] == .string("e30") && wr["transports"] == .array([.string("internal")]))
    }

    @Test func clientDataIsBrowserShaped() throws {
        let json = ClientData.json(type: "webauthn.get", challenge: Data([0xFB, 0xFF]), origin: "https://example.com:8443")
        #expect(
            String(decoding: json, as: UTF8.self)
                == #"{"type":"webauthn.get","challenge":"-_8","origin":"https://example.com:8443","crossOrigin":false}"#)
    }
}
