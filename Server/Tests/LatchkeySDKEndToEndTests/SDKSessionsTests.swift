import LatchkeyTestSupport
import Foundation
import Latchkey
@testable import LatchkeyServer
import Testing

@Suite("SDK ↔ server: sessions, endSession, signOutEverywhere")
struct SDKSessionsTests {
    /// A client signed in through its own browser: each one a session of its own on the server.
    func signedIn(_ server: TestServer, username: String = "demo@example.com", password: String = "correct horse battery staple")
        async throws -> LatchkeyClient
    {
        let client = LatchkeyClient(http: productionHTTPClient())
        try await client.initialize(config: server.sdkConfig())
        _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL(), username: username, password: password))
        return client
    }

    static func code(_ error: any Error) -> LatchkeyError.Code? { (error as? LatchkeyError)?.code }

    @Test func listTheSessionsAndEndTheOtherDevicesOne() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let laptop = try await signedIn(server), phone = try await signedIn(server)

        let sessions = try await laptop.sessions()
        #expect(sessions.count == 2)
        let current = try #require(sessions.first { $0.isCurrent })
        #expect(sessions.filter(\.isCurrent).count == 1)
        #expect(current.methods.contains("pwd") && current.authenticatedAt != nil && current.createdAt != nil)
        #expect((current.expiresAt ?? .distantPast) > Date())
        let app = try #require(current.applications.first)
        #expect(current.applications.count == 1)
        #expect(app.clientId == "latchkey-demo" && app.clientName == "Latchkey Demo" && app.isCurrent && app.lastRefreshedAt == nil)
        let other = try #require(sessions.first { !$0.isCurrent })
        #expect(try await phone.sessions().first { $0.isCurrent }?.id == other.id, "the phone sees its own as current")

        // The laptop ends the phone's session: the phone's tokens are refused at once.
        try await laptop.endSession(id: other.id)
        await #expect { try await phone.sessions() } throws: { Self.code($0) == .sessionExpired }
        #expect(try await laptop.sessions().map(\.id) == [current.id])
        // An unknown id, or another user's: not found, nothing said about it.
        let ada = try await signedIn(server, username: "ada@example.com", password: TestServer.adaPassword)
        let adaSession = try #require(try await ada.sessions().first?.id)
        for id in ["no-such-session", adaSession] {
            await #expect { try await laptop.endSession(id: id) } throws: {
                Self.code($0) == .invalidInput && ($0 as? LatchkeyError)?.statusCode == 404
            }
        }
        await #expect { try await laptop.endSession(id: "") } throws: { Self.code($0) == .invalidInput }
        #expect(try await ada.sessions().count == 1)

        // Ending its own session signs the client out here too.
        try await laptop.endSession(id: current.id)
        #expect(try await laptop.isSignedIn() == false)
    }

    @Test func signOutEverywhereKeepingThisDeviceThenEverywhere() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let laptop = try await signedIn(server), phone = try await signedIn(server), tablet = try await signedIn(server)
        let ada = try await signedIn(server, username: "ada@example.com", password: TestServer.adaPassword)

        try await laptop.signOutEverywhere(keepingThisDevice: true)
        #expect(try await laptop.isSignedIn())
        #expect(try await laptop.sessions().count == 1)
        for device in [phone, tablet] {
            await #expect { try await device.sessions() } throws: { Self.code($0) == .sessionExpired }
        }

        let changes = laptop.authStateChanges()
        try await laptop.signOutEverywhere()
        #expect(try await laptop.isSignedIn() == false, "the tokens are forgotten as signOut forgets them")
        var iterator = changes.makeAsyncIterator()
        var events: [AuthStateChange.Event] = []
        while let change = await iterator.next() {
            events.append(change.event)
            if change.event == .signedOut { break }
        }
        #expect(events.last == .signedOut)
        await #expect { try await laptop.sessions() } throws: { Self.code($0) == .sessionExpired }
        #expect(try await ada.sessions().count == 1, "another user's sessions go on")
    }

    @Test func listAndWithdrawTheConsentsGivenToThirdPartyApplications() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let client = try await signedIn(server)
        #expect(try await client.consents().isEmpty)
        // A consent as the consent page records it, for an application registered through the API.
        let demo = try #require(try await server.server.store.user(username: "demo@example.com"))
        try await server.server.store.insertClient(
            ClientRecord(
                configuration: ClientConfiguration(clientId: "lk-expenses", name: "Expense Reports", redirectUris: ["https://expenses.example/cb"]),
                secretHash: nil, origin: .registration))
        try await server.server.store.grantConsent(userId: demo.id, clientId: "lk-expenses", scopes: ["openid", "email"], now: Date())

        let consents = try await client.consents()
        let consent = try #require(consents.first)
        #expect(consents.count == 1)
        #expect(consent.clientId == "lk-expenses" && consent.clientName == "Expense Reports" && consent.scopes == ["email", "openid"])
        #expect(consent.grantedAt != nil && consent.id == "lk-expenses")

        try await client.withdrawConsent(clientId: "lk-expenses")
        #expect(try await client.consents().isEmpty)
        await #expect { try await client.withdrawConsent(clientId: "lk-expenses") } throws: {
            Self.code($0) == .invalidInput && ($0 as? LatchkeyError)?.statusCode == 404
        }
        await #expect { try await client.withdrawConsent(clientId: "") } throws: { Self.code($0) == .invalidInput }
    }
}
