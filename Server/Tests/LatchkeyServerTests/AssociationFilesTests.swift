import Foundation
import LatchkeyTestSupport
@testable import LatchkeyServer
import Testing

/// The association files (`/.well-known/apple-app-site-association`, `/.well-known/webauthn`): read from the
/// configuration, checked at start, served as Apple and browsers read them.
@Suite("Association files: configuration, start-up checks, serving")
struct AssociationFilesTests {
    static let app = "ABCDE12345.com.example.app"

    func refusal(_ settings: AssociationSettings, rpId: String = "example.com", development: Bool = false) -> String? {
        do { try settings.validate(rpId: rpId, development: development) } catch ConfigurationError.invalid(let why) { return why } catch {
            return "\(error)"
        }
        return nil
    }

    @Test("app ids must be TEAMID.bundle.id, once each")
    func appIds() {
        #expect(refusal(AssociationSettings(appleAppIds: [Self.app, "ABCDE12345.com.example.app-widget"])) == nil)
        for bad in [
            "com.example.app", "abcde12345.com.example.app", "ABCDE1234.com.example.app", "ABCDE12345.", "ABCDE12345.com..app",
            "ABCDE12345.com/app"
        ] {
            #expect(refusal(AssociationSettings(appleAppIds: [bad]))?.contains("TEAMID.bundle.id") == true, "\(bad)")
        }
        #expect(refusal(AssociationSettings(appleAppIds: [Self.app, Self.app]))?.contains("twice") == true)
    }

    @Test("related origins are https origins outside the RP ID, written as browsers compare them")
    func relatedOrigins() {
        #expect(refusal(AssociationSettings(relatedOrigins: ["https://example.co.uk", "https://shop.example.org:8443"])) == nil)
        let cases: [(String, String)] = [
            ("https://example.co.uk/login", "no path"), ("http://example.co.uk", "must be https"), ("https://EXAMPLE.co.uk", "write"),
            ("https://example.co.uk:443", "write"), ("https://login.example.com", "already inside the RP ID"),
            ("https://example.com", "already inside the RP ID"), ("example.co.uk", "is not an origin")
        ]
        for (origin, why) in cases {
            #expect(refusal(AssociationSettings(relatedOrigins: [origin]))?.contains(why) == true, "\(origin)")
        }
        // Plain http on loopback in development only.
        #expect(refusal(AssociationSettings(relatedOrigins: ["http://127.0.0.1:3000"]), rpId: "localhost", development: true) == nil)
        #expect(refusal(AssociationSettings(relatedOrigins: ["http://127.0.0.1:3000"]), rpId: "localhost") != nil)
    }

    @Test("the file's associations object is read, unknown keys refused, and validation runs at start")
    func configurationFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-assoc-\(UUID().uuidString).json").path
        try Data(#"{"associations": {"apple_app_ids": ["ABCDE12345.com.example.app"], "related_origins": ["https://example.co.uk"]}}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        var c = DevelopmentDefaults.configuration()
        try ConfigurationFile.load(path: path).apply(to: &c)
        #expect(c.associations == AssociationSettings(appleAppIds: [Self.app], relatedOrigins: ["https://example.co.uk"]))
        try c.validate()
        c.associations.appleAppIds = ["com.example.app"]
        #expect(throws: ConfigurationError.self) { try c.validate() }

        try Data(#"{"associations": {"apple_app_id": ["x"]}}"#.utf8).write(to: URL(fileURLWithPath: path))
        #expect { try ConfigurationFile.load(path: path) } throws: { "\($0)".contains("apple_app_ids") }
    }

    @Test("warnings: files served off the RP ID's host, passkey origins neither inside the RP ID nor related")
    func warnings() {
        let settings = AssociationSettings(appleAppIds: [Self.app], relatedOrigins: ["https://example.co.uk"])
        let client = ClientConfiguration(
            clientId: "web", passkeyOrigins: ["self", "https://login.example.com", "https://example.co.uk", "https://other.example.net"])
        let onHost = settings.warnings(issuer: URL(string: "https://example.com")!, rpId: "example.com", clients: [client])
        #expect(onHost.count == 1)
        #expect(onHost.first?.contains("https://other.example.net") == true)
        let offHost = settings.warnings(issuer: URL(string: "https://id.example.com")!, rpId: "example.com", clients: [])
        #expect(offHost.count == 1)
        #expect(offHost.first?.contains("https://example.com/.well-known/") == true)
    }

    @Test("applinks: the https redirect URIs on the issuer's host, exact paths, wildcard characters left out")
    func appleDocument() throws {
        let document = AppleAppSiteAssociation(
            appIds: [Self.app],
            redirectURIs: [
                "https://id.example.com/app/callback", "https://ID.example.com/app/callback", "https://id.example.com/other?x=1",
                "https://id.example.com/a*b", "https://elsewhere.example.com/cb", "com.example.app:/callback", "http://127.0.0.1/cb"
            ],
            host: "id.example.com")
        #expect(document.webcredentials.apps == [Self.app])
        #expect(document.applinks?.details.first?.components.map(\.path) == ["/app/callback", "/other"])
        let encoded = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(document)) as? [String: Any]
        let details = (encoded?["applinks"] as? [String: Any])?["details"] as? [[String: Any]]
        #expect((details?.first?["components"] as? [[String: String]])?.first == ["/": "/app/callback"])
        #expect(AppleAppSiteAssociation(appIds: [Self.app], redirectURIs: ["com.example.app:/cb"], host: "id.example.com").applinks == nil)
    }

    @Test("served at /.well-known as application/json, no redirect; 404 when the configuration names nothing")
    func served() async throws {
        let server = try await TestServer.start {
            $0.associations = AssociationSettings(appleAppIds: [Self.app], relatedOrigins: ["https://example.co.uk"])
            $0.clients.append(ClientConfiguration(clientId: "ios-app", redirectUris: ["https://127.0.0.1/app/callback"]))
            // A web application's callback on the same host stays a web page (never a universal link).
            $0.clients.append(ClientConfiguration(clientId: "web", redirectUris: ["https://127.0.0.1/web/callback"], appType: .browser))
        }
        defer { Task { await server.stop() } }
        let apple = try await server.call("GET", "/.well-known/apple-app-site-association", token: nil)
        #expect(apple.status == 200)
        #expect(apple.header("Content-Type") == "application/json")
        let object = try apple.json()
        #expect((object["webcredentials"] as? [String: Any])?["apps"] as? [String] == [Self.app])
        let details = (object["applinks"] as? [String: Any])?["details"] as? [[String: Any]]
        #expect((details?.first?["components"] as? [[String: String]]) == [["/": "/app/callback"]])
        let webauthn = try await server.call("GET", "/.well-known/webauthn", token: nil)
        #expect(webauthn.status == 200)
        #expect(try webauthn.json()["origins"] as? [String] == ["https://example.co.uk"])

        let bare = try await TestServer.start()
        defer { Task { await bare.stop() } }
        #expect(try await bare.call("GET", "/.well-known/apple-app-site-association", token: nil).status == 404)
        #expect(try await bare.call("GET", "/.well-known/webauthn", token: nil).status == 404)
    }
}
