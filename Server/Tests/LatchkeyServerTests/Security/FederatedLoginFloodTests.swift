import Foundation
@testable import LatchkeyServer
import LatchkeyTestSupport
import Testing

/// Third review, R3-7: `GET /login?request=…&idp=…` stored a federated-login row (state, verifier, nonce) on every call,
/// so one admitted authorization request gave unlimited writes. Each start of the upstream leg now takes a place in the
/// per-address start budget (`max_starts_per_address`), as the authorization request did.
@Suite("R3-7: one authorization request cannot write unlimited federated-login rows")
struct FederatedLoginFloodTests {
    @Test("1 000 GET /login?request=…&idp= from one address end in 429s; federated_logins grows by at most the budget")
    func providerStartsAreAdmittedPerAddress() async throws {
        let budget = 50
        let fixture = try await FederationFixture.start(configure: { $0.loginPolicy.maxStartsPerAddress = budget })
        defer { Task { await fixture.stop() } }
        let browser = TestBrowser()
        let authorize = try await browser.get(fixture.server.authorizeURL(AuthorizeOptions()))
        let login = try #require(authorize.location)
        #expect(login.hasPrefix("/login?request="), "one admitted authorization request")
        let before = try await fixture.server.rowCount("federated_logins")

        var statuses: [Int: Int] = [:]
        for _ in 0..<1000 {
            let started = try await browser.get(fixture.server.base + login + "&idp=" + fixture.providerId)
            statuses[started.status, default: 0] += 1
        }
        let rows = try await fixture.server.rowCount("federated_logins") - before
        #expect(statuses[302] ?? 0 <= budget, "at most the budget went to the provider: \(statuses)")
        #expect(statuses[429] ?? 0 >= 1000 - budget, "the rest were refused: \(statuses)")
        #expect(rows <= budget, "federated_logins grew by \(rows) rows")

        // The budget is a window, not a ban: once it has passed, the same address signs in through the provider.
        fixture.server.advanceClock(TimeInterval(fixture.server.server.configuration.loginPolicy.addressWindowSeconds + 1))
        let back = try await fixture.signIn(TestBrowser())
        #expect(back.locationQuery["code"] != nil, "the window slides: \(back.status)")
    }
}
