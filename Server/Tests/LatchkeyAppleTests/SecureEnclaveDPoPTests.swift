import LatchkeyTestSupport
import AppleFrameworkStandIns
import Foundation
@testable import Latchkey
import LatchkeyApple
import LatchkeyJOSE
import Testing

/// The Apple client's DPoP keys: in the (simulated) Secure Enclave where the device has one, so the session stores
/// only a handle that no other device can use; software keys where there is none.
@Suite("LatchkeyApple: DPoP keys in the Secure Enclave")
struct SecureEnclaveDPoPTests {
    let device = StandInDevice()

    func signIn(_ server: TestServer, storage: InMemoryStorageAdapter) async throws -> LatchkeyClient {
        device.webAuthentication = .navigates { request in try await server.browse(request.url) }
        let client = LatchkeyClient(http: productionHTTPClient(), prefersEphemeralWebBrowserSession: false)
        var config = server.appleConfig()
        config.useDPoP = true
        try await client.initialize(config: config, storage: storage)
        let screen = await ScreenStandIn()  // held: the request keeps its provider weakly, as Apple's session does
        _ = try await client.webviewLogin(WebviewLoginRequest(presentationContextProvider: screen))
        withExtendedLifetime(screen) {}
        return client
    }

    func storedTokens(_ storage: InMemoryStorageAdapter) async throws -> Latchkey.TokenSet {
        try StoredSession.decode(try #require(await storage.get("latchkey.session.default")))
    }

    @Test("a Secure Enclave key binds the session; the stored handle is useless on another device")
    func boundToTheDevice() async throws {
        try await device.withAppleServer { server in
            let storage = InMemoryStorageAdapter()
            let client = try await signIn(server, storage: storage)
            let tokens = try await storedTokens(storage)
            #expect(tokens.tokenType == "DPoP" && tokens.dpopKey?.hasPrefix("secure-enclave:") == true)
            #expect(tokens.dpopKey?.contains("PRIVATE KEY") == false, "no private key material is stored")
            #expect(try await client.getUser(options: ["source": "userinfo"]).email == "demo@example.com")

            // The same stored session on another device (a restored backup): the key cannot be used there.
            let elsewhere = StandInDevice()
            try await StandInSystem.$device.withValue(elsewhere) {
                let copy = LatchkeyClient(http: productionHTTPClient(), prefersEphemeralWebBrowserSession: false)
                var config = server.appleConfig()
                config.useDPoP = true
                try await copy.initialize(config: config, storage: storage)
                await #expect { _ = try await copy.getUser(options: ["source": "userinfo"]) } throws: {
                    ($0 as? LatchkeyError)?.code == .invalidToken
                }
            }
        }
    }

    @Test("without a Secure Enclave (the Simulator) the key is a software key, and the session still works")
    func softwareFallback() async throws {
        device.hasSecureEnclave = false
        try await device.withAppleServer { server in
            let storage = InMemoryStorageAdapter()
            let client = try await signIn(server, storage: storage)
            let tokens = try await storedTokens(storage)
            #expect(tokens.tokenType == "DPoP" && tokens.dpopKey?.hasPrefix("-----BEGIN PRIVATE KEY-----") == true)
            #expect(try await client.getUser(options: ["source": "userinfo"]).email == "demo@example.com")
        }
    }
}
