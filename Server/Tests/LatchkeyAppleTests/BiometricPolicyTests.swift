import AppleFrameworkStandIns
import Foundation
import Latchkey
@testable import LatchkeyApple
import LatchkeyTestSupport
import Testing

/// The stored session behind Face ID, Touch ID or the passcode (`BiometricProtection`): the item carries the access
/// control, the SDK reads it only after the person confirmed as the policy says, and a prompt that is cancelled or
/// fails never costs the session. The device's script plays the person; time moves only by the test clock.
@Suite("LatchkeyApple: biometric policy on the stored session")
struct BiometricPolicyTests {
    let device = StandInDevice()
    let clock = ManualClock(start: Date(timeIntervalSince1970: 1_800_000_000))
    static let key = "latchkey.session.default"
    static let reason = "Unlock your Example account"

    /// An adapter of its own service (`.appLifecycle` confirmations are process-wide, per service).
    func adapter(_ policy: BiometricPolicy, _ requirement: BiometricProtection.Requirement = .userPresence, service: String? = nil)
        -> KeychainStorageAdapter
    {
        KeychainStorageAdapter(
            service: service ?? "latchkey:biometric-\(UUID().uuidString)#app", accessibility: .afterFirstUnlockThisDeviceOnly,
            accessGroup: nil,
            biometrics: BiometricProtection(policy: policy, requirement: requirement, reason: Self.reason, cancelTitle: "Not now"),
            now: { [clock] in clock.now })
    }

    var prompts: [UserVerificationPrompt] {
        device.log.events.compactMap { if case .userVerificationPrompted(let prompt) = $0 { prompt } else { nil } }
    }

    @Test(
        "the item carries the access control; no session, no prompt; each read asks with the app's reason, one confirmation covering one action (10 s)"
    )
    func alwaysAsks() async throws {
        try await device.run {
            let keychain = adapter(.always)
            #expect(try await keychain.get(Self.key) == nil)
            try await keychain.set(Self.key, Data("session".utf8))
            #expect(prompts.isEmpty, "finding out there is no session, and storing a new one, ask nothing")
            let item = try #require(device.keychain.items.first)
            #expect(item.userVerification == .userPresence && item.accessible == "cku")

            #expect(try await keychain.get(Self.key) == Data("session".utf8))
            #expect(prompts == [UserVerificationPrompt(policy: .deviceOwnerAuthentication, reason: Self.reason, cancelTitle: "Not now")])
            clock.advance(by: 9)
            #expect(try await keychain.get(Self.key) != nil)
            #expect(prompts.count == 1, "a launch's read and the refresh right after it: one prompt")
            clock.advance(by: 2)
            #expect(try await keychain.get(Self.key) != nil)
            #expect(prompts.count == 2, "a later read asks again")
            try await keychain.set(Self.key, Data("rotated".utf8))
            #expect(prompts.count == 2, "the write after a read needs no second prompt")
        }
    }

    @Test("the system guards the item, not only the SDK: a read without a confirmed context prompts, and a cancel is refused")
    func theKeychainEnforcesIt() async throws {
        try await device.run {
            let keychain = adapter(.always)
            try await keychain.set(Self.key, Data("session".utf8))
            device.userVerification = { _ in .cancels }
            var query = keychain.itemQuery(Self.key)
            query[kSecReturnData as String] = true
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecUserCanceled)
            #expect(result == nil)
            let silent = LAContext()
            silent.interactionNotAllowed = true
            query[kSecUseAuthenticationContext as String] = silent
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecInteractionNotAllowed)
            #expect(prompts.count == 1, "a context that may not interact gets no prompt")
        }
    }

    @Test("a cancelled, failed or impossible prompt keeps the session: .biometricAuthenticationFailed, the item untouched")
    func aRefusedPromptKeepsTheSession() async throws {
        try await device.run {
            let keychain = adapter(.always)
            try await keychain.set(Self.key, Data("session".utf8))
            for outcome in [UserVerificationOutcome.cancels, .fails, .notEnrolled] {
                device.userVerification = { _ in outcome }
                await #expect("\(outcome)") { try await keychain.get(Self.key) } throws: {
                    let error = $0 as? LatchkeyError
                    return error?.code == .biometricAuthenticationFailed && error?.message.contains("kept") == true
                }
                clock.advance(by: 60)
            }
            #expect(device.keychain.items.count == 1)
            #expect(device.keychain.operations.allSatisfy { $0.operation != "delete" }, "nothing deleted")
            device.userVerification = { _ in .confirms }
            #expect(try await keychain.get(Self.key) == Data("session".utf8))
        }
    }

    @Test("session policy: one prompt until the timeout, again after it; a sign-out makes the next session ask")
    func sessionPolicy() async throws {
        try await device.run {
            let keychain = adapter(.session(timeoutInSeconds: 300))
            try await keychain.set(Self.key, Data("one".utf8))
            for _ in 0..<3 {
                #expect(try await keychain.get(Self.key) != nil)
                clock.advance(by: 99)
            }
            #expect(prompts.count == 1, "three reads within 300 s")
            clock.advance(by: 4)  // 301 s after the confirmation
            #expect(try await keychain.get(Self.key) != nil)
            #expect(prompts.count == 2)
            try await keychain.remove(Self.key)
            try await keychain.set(Self.key, Data("two".utf8))
            #expect(try await keychain.get(Self.key) != nil)
            #expect(prompts.count == 3, "a new session asks again")
            clock.advance(by: -1000)
            #expect(try await keychain.get(Self.key) != nil)
            #expect(prompts.count == 4, "a clock set back before the confirmation does not extend it")
        }
    }

    @Test("app-lifecycle policy: one prompt per launch, shared by the process's adapters of the items, kept across a sign-out")
    func appLifecyclePolicy() async throws {
        try await device.run {
            let service = "latchkey:launch-\(UUID().uuidString)#app"
            let app = adapter(.appLifecycle(timeoutInSeconds: 3600), service: service)
            try await app.set(Self.key, Data("one".utf8))
            #expect(try await app.get(Self.key) != nil)
            let another = adapter(.appLifecycle(timeoutInSeconds: 3600), service: service)
            #expect(try await another.get(Self.key) != nil)
            try await app.remove(Self.key)
            try await app.set(Self.key, Data("two".utf8))
            #expect(try await app.get(Self.key) == Data("two".utf8))
            #expect(prompts.count == 1)
            clock.advance(by: 3600)
            #expect(try await app.get(Self.key) != nil)
            #expect(prompts.count == 2, "after the timeout")
        }
    }

    @Test("current biometry: the item needs the biometry enrolled now, and the prompt has no passcode policy")
    func currentBiometry() async throws {
        try await device.run {
            let keychain = adapter(.always, .currentBiometry)
            try await keychain.set(Self.key, Data("session".utf8))
            #expect(device.keychain.items.first?.userVerification == .biometryCurrentSet)
            _ = try await keychain.get(Self.key)
            #expect(prompts.map(\.policy) == [.deviceOwnerAuthenticationWithBiometrics])
        }
    }

    @Test(
        "through the client: a launch asks once for the read and its refresh; a prompt cancelled at a later refresh sends nothing and keeps the session"
    )
    func throughTheClient() async throws {
        let server = try await TestServer.start { $0.lifetimes.accessToken = 10 }  // every access refreshes
        defer { Task { await server.stop() } }
        try await device.run {
            let service = "latchkey:client-\(UUID().uuidString)#app"
            _ = try await server.signedInClient(storage: adapter(.always, service: service))
            #expect(prompts.isEmpty, "storing the first session asks nothing")

            // The next launch.
            let http = ProgrammableHTTPClient()
            let client = LatchkeyClient(http: http)
            try await client.initialize(config: server.sdkConfig(), storage: adapter(.always, service: service))
            device.userVerification = { _ in .cancels }
            await #expect { try await client.getAccessToken() } throws: { ($0 as? LatchkeyError)?.code == .biometricAuthenticationFailed }
            #expect(http.refreshCount == 0)
            device.userVerification = { _ in .confirms }
            #expect(try await server.userinfo(try await client.getAccessToken()).status == 200)
            #expect(prompts.count == 2, "the cancelled one, then one for the launch's read and its refresh together")

            clock.advance(by: 60)
            device.userVerification = { _ in .cancels }
            await #expect { try await client.getAccessToken() } throws: { ($0 as? LatchkeyError)?.code == .biometricAuthenticationFailed }
            #expect(http.refreshCount == 1, "the refresh token was not read, so not presented")
            #expect(try await client.isSignedIn(), "the session in memory is kept")
            device.userVerification = { _ in .confirms }
            #expect(try await server.userinfo(try await client.getAccessToken()).status == 200)
            #expect(http.refreshCount == 2)
        }
    }
}
