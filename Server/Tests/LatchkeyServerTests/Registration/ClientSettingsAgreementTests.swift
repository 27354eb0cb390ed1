import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// One description of an application's settings (`ClientSetting.all`): each place that reads or writes an
/// application's settings agrees with the table, so a setting cannot be readable in one place and missing from another:
/// the configuration file and stored row, registration's reader and answer, the audit trail's list of changes, the
/// console's form (and what an edit there keeps), and the OpenAPI description.
@Suite("Application settings: one table")
struct ClientSettingsAgreementTests {
    /// Members that are no setting the console or the audit names: the credentials, and OpenID Connect's coarser type.
    static let credentials: Set = ["client_id", "client_secret"]

    /// An application with every setting away from its default (`variant` 1 and 2 differ in every one).
    static func everySettingSet(_ variant: Int) throws -> ClientConfiguration {
        var c = ClientConfiguration(
            clientId: "app-\(variant)", name: "App \(variant)", clientSecret: nil,
            tokenEndpointAuthMethod: variant == 1 ? .privateKeyJWT : .clientSecretPost,
            redirectUris: ["https://app\(variant).example/callback"],
            postLogoutRedirectUris: ["https://app\(variant).example/bye"],
            grantTypes: variant == 1 ? [.authorizationCode, .refreshToken] : [.authorizationCode, .implicit],
            scopes: ["openid", "scope\(variant)"], allowedAudiences: ["https://api\(variant).example"], requirePKCE: variant == 2,
            appType: variant == 1 ? .browser : .mobile, registration: variant == 1 ? .open : .inviteOnly,
            recoveryEnabled: variant == 2, requireMFA: variant == 1, passkeyOrigins: ["https://app\(variant).example"],
            appleBundleIds: ["com.example.app\(variant)"])
        c.responseTypes = variant == 1 ? [.code] : [.code, .codeIdToken]
        c.idTokenSignedResponseAlg = variant == 1 ? .es256 : .rs256
        c.userinfoSignedResponseAlg = variant == 1 ? .rs256 : .es256
        c.requireDPoP = variant == 1
        c.requirePushedAuthorizationRequests = variant == 1
        c.identityProviders = ["provider\(variant)"]
        c.jwks = JWKSet(keys: [try SigningKey.generate(variant == 1 ? .es256 : .rs256).publicJWK()])
        c.jwksURI = "https://app\(variant).example/jwks"
        c.requestURIs = ["https://app\(variant).example/request"]
        c.tokenEndpointAuthSigningAlg = variant == 1 ? .es256 : .rs256
        c.securityProfile = variant == 1 ? .fapi2 : nil
        c.backchannelLogoutUri = "https://app\(variant).example/backchannel"
        c.backchannelLogoutSessionRequired = variant == 1
        c.frontchannelLogoutUri = "https://app\(variant).example/frontchannel"
        c.frontchannelLogoutSessionRequired = variant == 2
        c.logoUri = "https://app\(variant).example/logo.png"
        c.policyUri = "https://app\(variant).example/policy"
        c.tosUri = "https://app\(variant).example/tos"
        c.clientUri = "https://app\(variant).example"
        c.subjectType = variant == 1 ? .pairwise : .public
        c.sectorIdentifierURI = "https://app\(variant).example/sector"
        return c
    }

    static func members(where include: (ClientSetting) -> Bool = { _ in true }) -> [String] {
        ClientSetting.all.filter(include).compactMap(\.member?.name)
    }

    @Test func theTableNamesEveryKeyOnce() {
        let files = ClientSetting.all.compactMap(\.file)
        let members = Self.members()
        #expect(Set(files).count == files.count && Set(members).count == members.count)
        #expect(ClientMetadata.members.map(\.name) == members)
    }

    /// The file's keys (and the stored row's) are the table's: a setting added to `ClientConfiguration` without a row
    /// fails here.
    @Test func theConfigurationFileReadsTheTablesSettings() {
        #expect(Set(ClientConfiguration.CodingKeys.allCases.map(\.stringValue)) == Set(ClientSetting.all.compactMap(\.file)))
    }

    /// Registration reads exactly the table's members, each by its JSON type: a member of the wrong type is refused
    /// naming it; a setting's file key, or a file-only setting, is no member (ignored, RFC 7591 §2).
    @Test func registrationReadsEveryMemberAndNothingElse() throws {
        for member in ClientMetadata.members {
            do {
                _ = try ClientMetadata([member.name: 42])
                Issue.record("\(member.name) of the wrong type was read")
            } catch {
                #expect(error.code == .invalidClientMetadata || error.code == .invalidRedirectURI, "\(member.name)")
                #expect(error.description.hasPrefix(member.name), "\(error.description)")
            }
        }
        let memberNames = Set(Self.members())
        let others = ClientSetting.all.compactMap(\.file).flatMap { [$0, "latchkey_" + $0] }.filter { !memberNames.contains($0) }
        #expect(!others.isEmpty)
        for key in others {
            #expect(try ClientMetadata([key: 42]) == ClientMetadata(), "\(key) is read")
        }
    }

    /// A member with a closed set of values is read as strictly as the file reads its setting: `latchkey_registration`
    /// with a value the file refuses is refused, not taken for the default.
    @Test func anUnknownRegistrationPolicyIsRefusedNotDefaulted() throws {
        for (value, refused) in [("everyone", true), ("invite_only", false), ("open", false)] {
            let metadata = try ClientMetadata(["redirect_uris": ["https://app.example/callback"], "latchkey_registration": value])
            do {
                let settings = try metadata.settings(clientId: "lk-app", policy: ClientRegistrationPolicy(), providers: [])
                #expect(!refused && settings.configuration.registration.rawValue == value, "\(value)")
            } catch {
                #expect(refused && error.code == .invalidClientMetadata, "\(value): \(error.description)")
                #expect(error.description.hasPrefix("latchkey_registration must be open, invite_only or disabled"))
            }
        }
    }

    /// The links the sign-in page shows are read alike by registration and the file: a fragment into the policy,
    /// terms or home page is taken by both; a logo's is refused by both.
    @Test func theFileAndRegistrationTakeTheSameShownLinks() throws {
        for (member, uri, taken) in [
            ("policy_uri", "https://app.example/legal#privacy", true), ("tos_uri", "https://app.example/legal#terms", true),
            ("client_uri", "https://app.example/#home", true), ("logo_uri", "https://app.example/logo.png#x", false)
        ] {
            let metadata = try ClientMetadata(["redirect_uris": ["https://app.example/callback"], member: uri])
            var registered = true
            do { _ = try metadata.settings(clientId: "lk-app", policy: ClientRegistrationPolicy(), providers: []) } catch {
                registered = false
            }
            var configured = ClientConfiguration(clientId: "app", redirectUris: ["https://app.example/callback"])
            switch member {
            case "policy_uri": configured.policyUri = uri
            case "tos_uri": configured.tosUri = uri
            case "client_uri": configured.clientUri = uri
            default: configured.logoUri = uri
            }
            var inFile = true
            do { try configured.validate() } catch { inFile = false }
            #expect(registered == taken && inFile == taken, "\(member): registration \(registered), file \(inFile)")
        }
    }

    /// The answer writes every member the application has (and the derived `application_type`), read back into the
    /// same metadata: the reader and the answer are one table.
    @Test func theAnswerWritesWhatRegistrationReads() throws {
        let c = try Self.everySettingSet(1)
        let information = ClientInformation(
            ClientRecord(configuration: c, secretHash: nil), registrationClientURI: "https://id.example/oauth2/register/app-1")
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(information)) as? [String: Any])
        let expected = Set(Self.members().filter { $0 != "client_secret" } + ["registration_client_uri"])
        #expect(Set(object.keys) == expected)
        var read = try ClientMetadata(object)
        #expect(read.applicationType == "web")
        read.applicationType = nil
        #expect(read == ClientMetadata(describing: c))
    }

    /// `ClientMetadata(describing:)`, which an update and the console start from, carries every member of a setting.
    @Test func describingAnApplicationCarriesEveryMember() throws {
        let described = ClientMetadata(describing: try Self.everySettingSet(1))
        let empty = ClientMetadata()
        let missing = ClientMetadata.members.filter { $0.same(described, empty) }.map(\.name)
        // Never described: the coarser type (derived by registration) and the secret (stored hashed).
        #expect(missing == ["application_type", "client_secret"])
    }

    /// The audit trail names every member an update changed.
    @Test func theAuditTrailNamesEveryChangedMember() throws {
        let one = try Self.everySettingSet(1)
        let changed = ClientRegistrations.changes(from: one, to: try Self.everySettingSet(2))["changed"]
        let listed = Self.members().filter { !Self.credentials.contains($0) && $0 != "application_type" }
        #expect(changed == listed.sorted().joined(separator: " "))
        #expect(ClientRegistrations.changes(from: one, to: one)["changed"] == "")
    }

    /// What the console's form does not show, an edit keeps (the bug of 40409b6: a form that forgot a field reset it).
    @Test func aConsoleEditKeepsEverySettingItDoesNotShow() throws {
        let c = try Self.everySettingSet(2)
        var before = ClientMetadata(describing: c)
        before.applicationType = "web"
        var after = before
        ConsoleApplications.FormValues(c).apply(to: &after)
        for setting in ClientSetting.all {
            guard case .kept = setting.console, let member = setting.member, member.name != "application_type" else { continue }
            #expect(member.same(before, after), "\(member.name)")
        }
        // The coarser type is dropped, so that the form's own `app_type` decides.
        #expect(after.applicationType == nil)
    }

    /// The form's fields are the table's console fields.
    @Test func theConsoleFormHasTheTablesFields() async throws {
        let (server, secret) = try await ConsoleTests.adminWithTOTP()
        defer { Task { await server.stop() } }
        let (browser, _) = try await ConsoleTests.signIn(server, secret: secret)
        let form = try await browser.get(server.base + "/admin/applications/new")
        #expect(form.status == 200)
        let names = try Regex(#"<(?:input|select|textarea)[^>]* name="([a-z_]+)""#)
        let fields = Set(form.text.matches(of: names).compactMap { $0.output[1].substring.map(String.init) })
        let table = Set(
            ClientSetting.all.compactMap { setting -> String? in
                if case .field(let field) = setting.console { field.name } else { nil }
            })
        #expect(fields == table.union(["csrf"]))
        // Each control drawn whole: every application type offered, every grant a box of its own with its value.
        for type in ClientConfiguration.AppType.allCases {
            #expect(form.text.contains(#"<option value="\#(type.rawValue)""#), "\(type)")
        }
        for grant in [GrantType.authorizationCode, .refreshToken, .clientCredentials, .deviceCode, .tokenExchange] {
            #expect(form.text.contains(#"name="grant_types" value="\#(grant.rawValue)""#), "\(grant)")
        }
    }

    /// The OpenAPI description's `ClientMetadata` is the table's members (the credentials in `ClientInformation`), each
    /// with its JSON type.
    @Test func theOpenAPIDescriptionHasTheTablesMembers() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let metadata = try #require((schemas["ClientMetadata"] as? [String: Any])?["properties"] as? [String: [String: Any]])
        #expect(Set(metadata.keys) == Set(Self.members().filter { !Self.credentials.contains($0) }))
        for member in ClientMetadata.members where !Self.credentials.contains(member.name) {
            let type = metadata[member.name]?["type"] as? String
            switch member {
            case .string: #expect(type == "string", "\(member.name)")
            case .strings:
                #expect(type == "array", "\(member.name)")
                // The reader's limit on every list, stated where a client reads the rules.
                #expect(metadata[member.name]?["maxItems"] as? Int == ClientMetadata.maxListLength, "\(member.name)")
            case .bool: #expect(type == "boolean", "\(member.name)")
            case .keySet: #expect(type == "object", "\(member.name)")
            }
        }
        let information = try #require((schemas["ClientInformation"] as? [String: Any])?["allOf"] as? [[String: Any]])
        let own = information.compactMap { $0["properties"] as? [String: Any] }.flatMap(\.keys)
        #expect(Self.credentials.isSubset(of: Set(own)))
    }

    /// `api/openapi.json`'s `ClientMetadata` properties are what the table generates (`ClientSetting.openAPIProperties`):
    /// a new row, or a value added to an enum a rule checks, fails here until the description is regenerated.
    @Test func theOpenAPIDescriptionIsTheTablesOutput() throws {
        let document = try JSONValue.parse(Data(OpenAPIDocument.json.utf8))
        let schemas = try #require(document.objectValue?["components"]?.objectValue?["schemas"]?.objectValue)
        let properties = try #require(schemas["ClientMetadata"]?.objectValue?["properties"]?.objectValue)
        let generated = ClientSetting.openAPIProperties
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try encoder.encode(JSONValue.object(generated)), as: UTF8.self)
        for name in Set(properties.keys).union(generated.keys).sorted() {
            #expect(properties[name] == generated[name], "\(name) differs from the table's")
        }
        #expect(
            properties == generated,
            "put this in api/openapi.json as components.schemas.ClientMetadata.properties, then run scripts/embed-openapi.py:\n\(text)")
        // Derived, not copied: the values come from the enums the rules check.
        let grants = generated["grant_types"]?.objectValue?["items"]?.objectValue?["enum"]?.arrayValue?.compactMap(\.stringValue)
        #expect(grants == GrantType.allCases.map(\.rawValue))
    }
}
