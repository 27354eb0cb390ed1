import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// `GET`/`DELETE /admin/v1/users/{id}/lockout` over real HTTP: an administrator sees why an account cannot sign in and
/// lifts the lock; everyone else is refused.
@Suite("Account lockout administration")
struct LockoutAdministrationTests {
    @Test func anAdministratorSeesAndLiftsALockout() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let ada = try #require(try await server.server.store.user(username: "ada@example.com"))
        let admin = try await server.clientToken(scope: "scim.admin")
        let unlocked = try await server.call("GET", "/admin/v1/users/\(ada.id)/lockout", token: admin)
        #expect(unlocked.status == 200, "\(unlocked.text)")
        #expect(try unlocked.value("locked") as? Bool == false && unlocked.value("failed_attempts") as? Int == 0)

        // Five wrong passwords from this address lock the account for it; the right one is then refused too.
        let browser = TestBrowser()
        for _ in 0..<5 {
            let page = try await server.openLoginPage(browser, AuthorizeOptions())
            _ = try await server.submitLogin(browser, page: page, username: "ada@example.com", password: "wrong guess")
        }
        let refused = try await server.submitLogin(
            browser, page: try await server.openLoginPage(browser, AuthorizeOptions()), username: "ada@example.com",
            password: TestServer.adaPassword)
        #expect(refused.status != 303, "locked")
        let locked = try await server.call("GET", "/admin/v1/users/\(ada.id)/lockout", token: admin)
        #expect(try locked.value("locked") as? Bool == true && locked.value("locked_addresses") as? Int == 1)
        #expect(try locked.string("address_locked_until") != nil)
        // The audit trail says why.
        let why = try await server.call("GET", "/admin/v1/audit-events?subject=\(ada.id)&type=account.locked", token: admin)
        #expect(try (why.value("events") as? [Any])?.count == 1)

        let lifted = try await server.call("DELETE", "/admin/v1/users/\(ada.id)/lockout", token: admin)
        #expect(lifted.status == 204, "\(lifted.text)")
        #expect(try await server.call("GET", "/admin/v1/users/\(ada.id)/lockout", token: admin).value("locked") as? Bool == false)
        let fresh = TestBrowser()
        let signedIn = try await server.submitLogin(
            fresh, page: try await server.openLoginPage(fresh, AuthorizeOptions()), username: "ada@example.com",
            password: TestServer.adaPassword)
        #expect(signedIn.status == 303, "unlocked: \(signedIn.status)")
        let event = try #require(try await server.server.store.auditEvents(AuditQuery(types: [.accountUnlocked], limit: 5)).first)
        #expect(event.subject == ada.id && event.actor == "client:backend" && event.details["was_locked"] == "true")
    }

    @Test func onlyAdministratorsSeeOrLiftLockouts() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let ada = try #require(try await server.server.store.user(username: "ada@example.com"))
        for method in ["GET", "DELETE"] {
            #expect(try await server.call(method, "/admin/v1/users/\(ada.id)/lockout", token: nil).status == 401)
            let user = try await server.userTokens().accessToken  // the admin user, without the scope
            #expect(try await server.call(method, "/admin/v1/users/\(ada.id)/lockout", token: user).status == 403)
            let notAdmin = try await server.userTokens(
                username: "grace+ops@example.com", password: "grace's compiler password", scope: "openid scim.admin")
            #expect(try await server.call(method, "/admin/v1/users/\(ada.id)/lockout", token: notAdmin.accessToken).status == 403)
            let admin = try await server.clientToken(scope: "scim.admin")
            #expect(try await server.call(method, "/admin/v1/users/no-such-user/lockout", token: admin).status == 404)
        }
        #expect(try await server.server.store.auditEvents(AuditQuery(types: [.accountUnlocked], limit: 5)).isEmpty)
    }
}
