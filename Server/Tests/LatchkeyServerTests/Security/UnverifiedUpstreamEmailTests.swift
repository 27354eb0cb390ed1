import Foundation
import LatchkeyJOSE
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Third review, R3-8: a just-in-time account took the provider's *unverified* email as its unique `email`, so the
/// address's real owner could neither register with it nor sign in with a verified identity for it. An unverified
/// upstream address is no longer stored; a verified one still is.
@Suite("R3-8: an unverified upstream email does not squat the address")
struct UnverifiedUpstreamEmailTests {
    static let address = "dave@example.com"

    /// A squatter's provider says `dave@example.com`, unverified: the sign-in works, the address is not taken.
    static func squat(_ fixture: FederationFixture) async throws -> [String: JSONValue] {
        let squatter = try await fixture.tokens()
        #expect(squatter.id["email"] == nil, "the unverified address is not the account's email: \(squatter.id)")
        #expect(try await fixture.server.server.store.users(claim: "email", equals: Self.address).isEmpty)
        #expect(try await fixture.server.server.store.user(username: Self.address) == nil)
        return squatter.id
    }

    @Test("JIT sign-in with email_verified false, then the owner's verified first sign-in for the address succeeds")
    func verifiedOwnerSignsInAfterAnUnverifiedSquatter() async throws {
        let fixture = try await FederationFixture.start(
            user: UpstreamProviderDouble.User(sub: "squatter", email: Self.address, emailVerified: false))
        defer { Task { await fixture.stop() } }
        let squatter = try await Self.squat(fixture)

        fixture.upstream.setUser(UpstreamProviderDouble.User(sub: "dave", email: Self.address, emailVerified: true))
        let owner = try await fixture.tokens()
        #expect(owner.id["sub"] != squatter["sub"], "a new account for the owner")
        #expect(owner.id["email"]?.stringValue == Self.address)
        #expect(owner.id["email_verified"]?.boolValue == true)
        #expect(try await fixture.server.server.store.users(claim: "email", equals: Self.address).count == 1)
        // The squatter still signs in to its own account (the link), which still has no address.
        fixture.upstream.setUser(UpstreamProviderDouble.User(sub: "squatter", email: Self.address, emailVerified: false))
        let again = try await fixture.tokens()
        #expect(again.id["sub"] == squatter["sub"] && again.id["email"] == nil)
    }

    @Test("JIT sign-in with email_verified false, then the owner registers with the address")
    func ownerRegistersAfterAnUnverifiedSquatter() async throws {
        let fixture = try await FederationFixture.start(
            user: UpstreamProviderDouble.User(sub: "squatter", email: Self.address, emailVerified: false))
        defer { Task { await fixture.stop() } }
        _ = try await Self.squat(fixture)

        let flow = FlowDriver(fixture.server)
        #expect(try await flow.start("REGISTRATION").flowStatus == "INCOMPLETE")
        var step = try await flow.submit("action_credentials", ["username": Self.address, "password": "dave's long enough password 42"])
        if step.flowStatus == "INCOMPLETE", step.text.contains("action_attributes") {
            step = try await flow.submit("action_attributes", ["email": Self.address])
        }
        #expect(step.flowStatus == "COMPLETE", "registered: \(step.flowErrorCode ?? "") \(step.text.prefix(400))")
        #expect(try await fixture.server.server.store.user(username: Self.address) != nil)
    }

    @Test("positive control: a JIT account whose provider verified the address gets it as its email")
    func verifiedAddressIsKept() async throws {
        let fixture = try await FederationFixture.start(
            user: UpstreamProviderDouble.User(sub: "dave", email: Self.address, emailVerified: true))
        defer { Task { await fixture.stop() } }
        let tokens = try await fixture.tokens()
        #expect(tokens.id["email"]?.stringValue == Self.address)
        #expect(tokens.id["email_verified"]?.boolValue == true)
        let user = try #require(try await fixture.server.server.store.users(claim: "email", equals: Self.address).first)
        #expect(user.username == Self.address && user.claims["email_verified"] == "true")
    }
}
