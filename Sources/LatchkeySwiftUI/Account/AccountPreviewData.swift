import Foundation
import Latchkey

// What the account screens show in a preview (`LatchkeyState.preview(user:)`): plausible data, no server.

extension SecondFactors {
    static let preview = SecondFactors(
        factors: [SecondFactor(kind: .totp, createdAt: Date(timeIntervalSince1970: 1_780_000_000), isUsable: true)],
        recoveryCodes: RecoveryCodesStatus(createdAt: Date(timeIntervalSince1970: 1_780_000_000), remaining: 8, total: 10),
        isRequired: false)
}

extension DeviceCredential {
    static let previews = [
        DeviceCredential(friendlyName: "iPhone", id: "preview-1", createdAt: "2026-05-28T09:00:00Z", lastUsedAt: "2026-11-27T18:30:00Z"),
        DeviceCredential(friendlyName: "Work laptop", id: "preview-2", createdAt: "2026-09-02T14:00:00Z")
    ]
}

extension SignInSession {
    static let previews = [
        SignInSession(
            id: "preview-1", isCurrent: true, createdAt: Date(timeIntervalSince1970: 1_795_000_000), methods: ["pwd", "otp"],
            applications: [SignedInApplication(id: "a", clientId: "app", clientName: "My App")]),
        SignInSession(
            id: "preview-2", isCurrent: false, createdAt: Date(timeIntervalSince1970: 1_794_000_000), methods: ["hwk"],
            applications: [SignedInApplication(id: "b", clientId: "web", clientName: "My App on the web")])
    ]
}

extension LinkedIdentities {
    static let preview = LinkedIdentities(
        identities: [LinkedIdentity(provider: "google", name: "Google", linkedAt: Date(timeIntervalSince1970: 1_790_000_000))],
        available: [ProviderConfig(provider: "google", name: "Google"), ProviderConfig(provider: "corp", name: "Corp SSO")])
}
