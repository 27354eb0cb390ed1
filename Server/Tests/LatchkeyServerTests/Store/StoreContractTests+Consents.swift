import Foundation
@testable import LatchkeyServer
import Testing

private typealias Make = StoreFixture
private func at(_ seconds: TimeInterval) -> Date { StoreFixture.at(seconds) }

/// Consents to third-party applications (R3-2), on every store: widened never narrowed, one per (user, application),
/// withdrawn once, gone with the account and with the application.
extension StoreContractTests {
    @Test(arguments: StoreKind.available)
    func consentsWidenAndEndWithTheAccountOrTheApplication(_ kind: StoreKind) async throws {
        try await kind.withStore { store async throws in
            let ada = try await Make.insertUser(store)
            let bob = try await Make.insertUser(store)
            var app = ClientConfiguration(clientId: Make.unique("app"), redirectUris: ["https://app.example/cb"])
            app.name = "App"
            try await store.insertClient(ClientRecord(configuration: app, secretHash: nil, origin: .registration))
            #expect(try await store.consent(userId: ada.id, clientId: app.clientId) == nil)

            let first = try await store.grantConsent(userId: ada.id, clientId: app.clientId, scopes: ["openid", "email", "openid"], now: at(10))
            #expect(first.scopes == ["email", "openid"], "sorted, without duplicates")
            #expect(first.grantedAt == at(10) && first.updatedAt == at(10))
            #expect(first.covers(["openid"]) && !first.covers(["openid", "profile"]))

            // A wider request widens it; a narrower one never narrows it; the first consent's time stays.
            let wider = try await store.grantConsent(userId: ada.id, clientId: app.clientId, scopes: ["profile"], now: at(20))
            #expect(wider.scopes == ["email", "openid", "profile"])
            #expect(try await store.consent(userId: ada.id, clientId: app.clientId) == wider)
            #expect(wider.grantedAt == at(10) && wider.updatedAt == at(20))
            try await store.grantConsent(userId: bob.id, clientId: app.clientId, scopes: ["openid"], now: at(30))
            try await store.grantConsent(userId: bob.id, clientId: "other-app", scopes: ["openid"], now: at(30))
            #expect(try await store.consents(userId: bob.id).map(\.clientId) == [app.clientId, "other-app"].sorted())
            #expect(try await store.consents(userId: ada.id).count == 1, "never another user's")

            #expect(try await store.withdrawConsent(userId: ada.id, clientId: app.clientId))
            #expect(!(try await store.withdrawConsent(userId: ada.id, clientId: app.clientId)), "once")
            #expect(try await store.consent(userId: ada.id, clientId: app.clientId) == nil)

            // Deleting the application ends its consents; deleting the account ends the account's.
            #expect(try await store.deleteClient(id: app.clientId, now: at(40)))
            #expect(try await store.consents(userId: bob.id).map(\.clientId) == ["other-app"])
            #expect(try await store.deleteUser(id: bob.id, now: at(50)))
            #expect(try await store.consents(userId: bob.id).isEmpty)
        }
    }
}
