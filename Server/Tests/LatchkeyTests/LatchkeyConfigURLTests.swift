import Foundation
import Latchkey
import Testing

/// `LatchkeyConfig` in `URL`s: the same strings underneath, checked the same way by `initialize`.
@Suite("LatchkeyConfig in URLs")
struct LatchkeyConfigURLTests {
    @Test func theURLPropertiesReadAndWriteTheStrings() throws {
        var config = LatchkeyConfig(
            issuerURL: try #require(URL(string: "https://id.example.com")), clientId: "ios-app",
            redirectURI: URL(string: "io.example.app:/callback"))
        #expect(config.baseUrl == "https://id.example.com" && config.issuer == "https://id.example.com")
        #expect(config.afterSignInUrl == "io.example.app:/callback" && config.afterSignOutUrl == nil)
        #expect(config.postLogoutRedirectURI == nil && config.redirectURI?.scheme == "io.example.app")

        config.postLogoutRedirectURI = URL(string: "io.example.app:/logout")
        #expect(config.afterSignOutUrl == "io.example.app:/logout")
        config.afterSignInUrl = "io.example.app:/other"
        #expect(config.redirectURI == URL(string: "io.example.app:/other"))
        config.issuerURL = URL(string: "https://login.example.org/tenant/")
        #expect(config.baseUrl == "https://login.example.org/tenant/" && config.issuer == "https://login.example.org/tenant")
        config.redirectURI = nil
        #expect(config.afterSignInUrl == nil)
    }

    @Test func initializeChecksAURLConfigurationAsItChecksStrings() async throws {
        let plain = LatchkeyConfig(issuerURL: try #require(URL(string: "http://id.example.com")), clientId: "ios-app")
        await #expect { try await LatchkeyClient().initialize(config: plain) } throws: {
            ($0 as? LatchkeyError)?.code == .invalidConfiguration
        }
        let schemeless = LatchkeyConfig(
            issuerURL: try #require(URL(string: "https://id.example.com")), clientId: "ios-app", redirectURI: URL(string: "callback"))
        await #expect { try await LatchkeyClient().initialize(config: schemeless) } throws: {
            ($0 as? LatchkeyError)?.code == .invalidRedirectUri
        }
    }
}
