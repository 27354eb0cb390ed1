import AppleFrameworkStandIns
import Foundation
import Latchkey
@testable import LatchkeyApple
import LatchkeyTestSupport
import Testing

/// Processes sharing one Keychain item (an app and its extensions, each its own adapter on the same service and
/// access group of one device) refresh the session once, and a crashed holder's lease expires.
@Suite("LatchkeyApple: one refresh across processes sharing the Keychain")
struct KeychainRefreshLeaseTests {
    let device = StandInDevice()
    static let group = "TEAMID.io.latchkey.shared"

    /// A process's adapter. Its leases are timed by `now`, by default a time that never moves: a lease then never
    /// expires under a slow holder (a saturated machine), which only the expiry test wants.
    func adapter(now: @escaping @Sendable () -> Date = { Date(timeIntervalSince1970: 1_800_000_000) }) -> KeychainStorageAdapter {
        KeychainStorageAdapter(service: "latchkey:test#app", accessibility: .afterFirstUnlockThisDeviceOnly, accessGroup: Self.group, now: now)
    }

    /// Counts bodies running at once.
    actor Occupancy {
        var inside = 0
        var most = 0
        func enter() { inside += 1; most = max(most, inside) }
        func leave() { inside -= 1 }
    }

    @Test("twelve processes taking the lease at once: never two inside; no lease item is left behind")
    func oneHolderAtATime() async throws {
        device.keychain.entitledAccessGroups = ["TEAMID.io.latchkey.app", Self.group]
        // Leases timed by a clock that stands still (the default): on a saturated machine a holder can take longer
        // than a lease lasts, and an expired lease is taken over by design; mutual exclusion is what this test is about.
        try await device.run {
            let occupancy = Occupancy()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<12 {
                    let process = adapter()
                    group.addTask {
                        try await process.withExclusiveAccess(to: "latchkey.session.default") {
                            await occupancy.enter()
                            for _ in 0..<2 { await Task.yield() }
                            await occupancy.leave()
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(await occupancy.most == 1)
            #expect(device.keychain.items.isEmpty, "every lease was released")
        }
    }

    @Test("a holder that crashed leaves a lease that expires by the clock: the next process takes it over; a live one is never deleted")
    func crashedHoldersLeaseExpires() async throws {
        device.keychain.entitledAccessGroups = ["TEAMID.io.latchkey.app", Self.group]
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_800_000_000))
        try await device.run {
            let crashed = adapter(now: { clock.now })
            // What a killed process leaves: its lease, taken now, never released.
            var item = crashed.leaseQuery("latchkey.session.default", holder: "killed-process")
            item[kSecValueData as String] = try JSONEncoder().encode(
                KeychainStorageAdapter.Lease(holder: "killed-process", expiresAt: clock.now.addingTimeInterval(KeychainStorageAdapter.leaseSeconds)))
            #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)

            // A stale deleter naming another holder deletes nothing (the compare-and-swap the takeover relies on).
            #expect(SecItemDelete(crashed.leaseQuery("latchkey.session.default", holder: "someone-else") as CFDictionary) == errSecItemNotFound)
            #expect(device.keychain.items.count == 1)

            clock.advance(by: KeychainStorageAdapter.leaseSeconds + 1)
            let next = adapter(now: { clock.now })
            let ran = try await next.withExclusiveAccess(to: "latchkey.session.default") {
                device.keychain.items.first?.label
            }
            #expect(ran != nil && ran != "killed-process", "the next process held its own lease")
            #expect(device.keychain.items.isEmpty)

            // A lease dated further ahead than any lease can be (written while the clock was ahead) is not waited for.
            var ahead = crashed.leaseQuery("latchkey.session.default", holder: "clock-was-ahead")
            ahead[kSecValueData as String] = try JSONEncoder().encode(
                KeychainStorageAdapter.Lease(holder: "clock-was-ahead", expiresAt: clock.now.addingTimeInterval(3600)))
            #expect(SecItemAdd(ahead as CFDictionary, nil) == errSecSuccess)
            #expect(try await next.withExclusiveAccess(to: "latchkey.session.default") { device.keychain.items.first?.label } != "clock-was-ahead")
        }
    }

    @Test("an app and its extension on an expired access token: one refresh at the server, both adopt it, the family lives")
    func appAndExtensionRefreshOnce() async throws {
        device.keychain.entitledAccessGroups = ["TEAMID.io.latchkey.app", Self.group]
        let server = try await TestServer.start { $0.lifetimes.accessToken = 10 }  // always due for refresh
        defer { Task { await server.stop() } }
        try await device.run {
            let appHTTP = ProgrammableHTTPClient()
            let app = try await server.signedInClient(http: appHTTP, storage: adapter())
            let extensionHTTP = ProgrammableHTTPClient()
            let widget = LatchkeyClient(http: extensionHTTP)
            try await widget.initialize(config: server.sdkConfig(), storage: adapter())
            #expect(try await widget.isSignedIn(), "the extension reads the app's session")
            appHTTP.forgetRecords()

            async let fromApp = app.getAccessToken()
            async let fromWidget = widget.getAccessToken()
            let (a, b) = try await (fromApp, fromWidget)
            #expect(appHTTP.refreshCount + extensionHTTP.refreshCount == 1, "one refresh between the two processes")
            #expect(a == b, "the other adopted the stored result")
            #expect(try await server.userinfo(a).status == 200)
            // With the server's reuse interval off (tests), a second presentation would have revoked the family.
            _ = try await widget.getAccessToken()  // due again: the widget rotates once more
            #expect(try await server.userinfo(try await app.getAccessToken()).status == 200, "the app adopts the widget's rotation")
            #expect(appHTTP.refreshCount + extensionHTTP.refreshCount == 2, "adopted, not refreshed again")
            #expect(try await app.isSignedIn())
            #expect(try await widget.isSignedIn())
        }
    }

    @Test("a refresh whose write to the shared item fails is kept in memory, and written under the lease at the next access")
    func failedWriteUnderTheLeaseIsNotLost() async throws {
        device.keychain.entitledAccessGroups = ["TEAMID.io.latchkey.app", Self.group]
        let server = try await TestServer.start { $0.lifetimes.accessToken = 10 }
        defer { Task { await server.stop() } }
        try await device.run {
            let storage = adapter()
            let http = ProgrammableHTTPClient()
            let client = try await server.signedInClient(http: http, storage: storage)
            let before = try #require(try await storage.get("latchkey.session.default"))
            device.keychain.failNext("update", with: errSecInteractionNotAllowed)
            let token = try await client.getAccessToken()
            #expect(try await server.userinfo(token).status == 200, "the refresh worked; the failed write did not fail the caller")
            #expect(try await storage.get("latchkey.session.default") == before, "the item still holds the spent token")
            _ = try await client.getAccessToken()
            let written = try await storage.get("latchkey.session.default")
            #expect(written != before, "written at the next access")
            #expect(http.refreshCount == 2, "each refresh presented the newest token: no replay")

            // Again, and this time the retried write fails too: the stored set is older than the one in memory, so
            // the refresh presents the newer token and stores its result, instead of adopting the stored set.
            device.keychain.failNext("update", with: errSecInteractionNotAllowed)
            _ = try await client.getAccessToken()
            device.keychain.failNext("update", with: errSecInteractionNotAllowed)
            let newest = try await client.getAccessToken()
            #expect(http.refreshCount == 4, "refreshed with the token in memory, not the stored (older) one")
            #expect(try await server.userinfo(newest).status == 200)
            #expect(try await storage.get("latchkey.session.default") != written, "and stored")
            #expect(try await client.isSignedIn())
            #expect(device.keychain.items.count == 1, "no lease left behind")
        }
    }
}
