import LatchkeyTestSupport
import Foundation
import Latchkey
import Testing

/// The SDK's account calls against the real server over loopback: the data export as the bytes the server sent, and a
/// sign-in too old for it as `.reauthenticationRequired` with the session kept.
@Suite("SDK ↔ server: the account's data")
struct SDKAccountDataTests {
    @Test("exportAccountData returns the server's JSON document for the signed-in account")
    func exportsTheDocument() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await server.signedInClient()
        let data = try await client.exportAccountData()
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect((document["profile"] as? [String: Any])?["username"] as? String == "demo@example.com")
        #expect(document["audit_events"] is [Any] && document["sessions"] is [String: Any])
    }

    @Test("a sign-in older than the server's recent_auth_seconds: .reauthenticationRequired, still signed in, nothing deleted")
    func tooOldASignIn() async throws {
        let server = try await TestServer.start { $0.recentAuthenticationSeconds = 60 }
        defer { Task { await server.stop() } }
        let client = try await server.signedInClient()
        server.freezeClock()
        server.advanceClock(61)
        await #expect(throws: LatchkeyError.self) { try await client.exportAccountData() }
        do {
            try await client.deleteAccount()
            Issue.record("deleted with a sign-in too old")
        } catch let error as LatchkeyError {
            #expect(error.code == .reauthenticationRequired && error.message.contains("recent sign-in"), "\(error)")
        }
        do {
            _ = try await client.exportAccountData()
        } catch let error as LatchkeyError {
            #expect(error.code == .reauthenticationRequired, "\(error)")
        }
        #expect(try await client.isSignedIn())
        #expect(try await server.server.user(username: "demo@example.com") != nil)
    }
}
