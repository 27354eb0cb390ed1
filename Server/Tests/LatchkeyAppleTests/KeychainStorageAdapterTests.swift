import AppleFrameworkStandIns
import Foundation
import Latchkey
import LatchkeyApple
import Testing

/// The Keychain adapter against the keychain stand-in (Apple's data-protection rules, per-test device).
@Suite("LatchkeyApple: KeychainStorageAdapter")
struct KeychainStorageAdapterTests {
    let device = StandInDevice()

    @Test("round trip, update in place (no delete, one item), two sessions, remove, missing item")
    func roundTrip() async throws {
        try await device.run {
            let keychain = KeychainStorageAdapter(service: "latchkey:https://id.example#app")
            #expect(try await keychain.get("latchkey.session.default") == nil)
            try await keychain.set("latchkey.session.default", Data("one".utf8))
            try await keychain.set("latchkey.session.default", Data("two".utf8))
            try await keychain.set("latchkey.session.work", Data("w".utf8))
            #expect(try await keychain.get("latchkey.session.default") == Data("two".utf8))
            #expect(try await keychain.get("latchkey.session.work") == Data("w".utf8))
            let items = device.keychain.items
            #expect(items.count == 2)
            #expect(items.allSatisfy { $0.accessible == "cku" && !$0.synchronizable && $0.service == "latchkey:https://id.example#app" })
            // The second write of a session is an update, never delete + add.
            let writes = device.keychain.operations.map(\.operation).filter { $0 != "copyMatching" }
            #expect(writes == ["update", "add", "update", "update", "add"])
            try await keychain.remove("latchkey.session.default")
            try await keychain.remove("latchkey.session.default")  // missing: not an error
            #expect(try await keychain.get("latchkey.session.default") == nil)
            #expect(try await keychain.get("latchkey.session.work") == Data("w".utf8))
        }
    }

    @Test("service from the configuration; accessibility choices; queries never synchronizable")
    func queryShape() async throws {
        try await device.run {
            let config = LatchkeyConfig(baseUrl: "https://id.example/", clientId: "app")
            #expect(KeychainStorageAdapter.service(for: config) == "latchkey:https://id.example#app")
            let keychain = KeychainStorageAdapter(config: config, accessibility: .whenUnlockedThisDeviceOnly)
            try await keychain.set("k", Data("v".utf8))
            #expect(device.keychain.items.first?.accessible == "aku")
            #expect(device.keychain.operations.allSatisfy { $0.query["sync"] == "false" && $0.query["class"] == "genp" })
        }
    }

    @Test("access group: in every query when set; one outside the entitlements is a configuration error")
    func accessGroup() async throws {
        try await device.run {
            device.keychain.entitledAccessGroups = ["TEAMID.io.latchkey.app", "TEAMID.io.latchkey.shared"]
            let shared = KeychainStorageAdapter(service: "s", accessGroup: "TEAMID.io.latchkey.shared")
            try await shared.set("k", Data("v".utf8))
            #expect(try await shared.get("k") == Data("v".utf8))
            #expect(device.keychain.operations.allSatisfy { $0.query["agrp"] == "TEAMID.io.latchkey.shared" })
            #expect(device.keychain.items.first?.accessGroup == "TEAMID.io.latchkey.shared")
            let own = KeychainStorageAdapter(service: "s")
            #expect(try await own.get("k") == Data("v".utf8), "as on Apple, a query without a group searches all the app's groups")
            let wrong = KeychainStorageAdapter(service: "s", accessGroup: "OTHER.group")
            await #expect { try await wrong.set("k", Data()) } throws: { ($0 as? LatchkeyError)?.code == .invalidConfiguration }
        }
    }

    @Test("device locked: reading before first unlock is .storageUnavailable and the item stays; writes too; after unlock all is there")
    func lockedDevice() async throws {
        try await device.run {
            let keychain = KeychainStorageAdapter(service: "s")
            try await keychain.set("k", Data("session".utf8))
            device.keychain.lockState = .locked
            #expect(try await keychain.get("k") == Data("session".utf8), "after-first-unlock items are readable while locked")
            device.keychain.lockState = .beforeFirstUnlock
            await #expect { try await keychain.get("k") } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .storageUnavailable && e.category == .technicalError
            }
            await #expect { try await keychain.set("k", Data("other".utf8)) } throws: { ($0 as? LatchkeyError)?.code == .storageUnavailable }
            #expect(device.keychain.items.map(\.data) == [Data("session".utf8)], "nothing deleted or replaced")
            device.keychain.lockState = .unlocked
            #expect(try await keychain.get("k") == Data("session".utf8))

            let strict = KeychainStorageAdapter(service: "strict", accessibility: .whenUnlockedThisDeviceOnly)
            try await strict.set("k", Data("x".utf8))
            device.keychain.lockState = .locked
            await #expect { try await strict.get("k") } throws: { ($0 as? LatchkeyError)?.code == .storageUnavailable }
        }
    }

    @Test("an item added by another process between update and add is updated, not duplicated; other statuses are technical errors")
    func raceAndFailures() async throws {
        try await device.run {
            let keychain = KeychainStorageAdapter(service: "s")
            try await keychain.set("k", Data("v1".utf8))
            // Another process adds the item after our update found none: the add is a duplicate, so update it.
            device.keychain.failNext("update", with: errSecItemNotFound)
            try await keychain.set("k", Data("v2".utf8))
            #expect(device.keychain.operations.map(\.operation).suffix(3) == ["update", "add", "update"])
            #expect(device.keychain.items.map(\.data) == [Data("v2".utf8)])
            device.keychain.failNext("copyMatching", with: errSecNotAvailable)
            await #expect { try await keychain.get("k") } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .unknownError && e.message.contains("No keychain is available")
            }
        }
    }
}
