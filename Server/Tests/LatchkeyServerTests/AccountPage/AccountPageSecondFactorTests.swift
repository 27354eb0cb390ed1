import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyServer

/// The account page's second sign-in steps (`/account/security`) over real HTTP: an authenticator app set up from its
/// QR code and first code, emailed codes, recovery codes shown once, a step removed, and the rules the JSON API has:
/// a recent sign-in for every change, the last step kept while an application requires one, mails and audit events.
@Suite("Account page: second sign-in steps")
struct AccountPageSecondFactorTests {
    /// A server where Ada's address is verified (notices and emailed codes go only to a proved address).
    static func start() async throws -> TestServer {
        let server = try await TestServer.startForProfiles()
        var ada = try await AccountPageRig.ada(server)
        ada.claims["email_verified"] = "true"
        try await server.server.store.updateUser(ada)
        return server
    }

    static func notices(_ server: TestServer) async throws -> [String] {
        try await server.server.outboxMessages(recipient: "ada@example.com").map(\.subject)
    }

    @Test func anAuthenticatorIsSetUpFromItsQRCodeAndFirstCode() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let (browser, page) = try await AccountPageRig.signIn(server, path: "/account/security")
        #expect(page.text.contains("id=\"no-factors\"") && page.text.contains("action=\"/account/security/totp\""))
        #expect(!page.text.contains("id=\"fresh\""), "just signed in: nothing is off")

        let setUp = try await AccountPageRig.post(server, browser, "/account/security/totp")
        #expect(setUp.status == 200 && setUp.header("Cache-Control") == "no-store", "\(setUp.status)")
        let uri = try #require(setUp.text.firstMatch(of: #/href="(otpauth://totp/[^"]+)"/#).map { String($0.1) })
        let shownKey = try #require(setUp.text.firstMatch(of: #/id="totp-key">([A-Z2-7 ]+)</#).map { String($0.1) })
        let base32 = shownKey.replacingOccurrences(of: " ", with: "")
        #expect(uri.hasPrefix("otpauth://totp/127.0.0.1:ada%40example.com?secret=\(base32)&amp;issuer="), "\(uri)")
        // The QR code is the URI's, drawn on the server (no script, no image from elsewhere).
        let expected = try QRCode(text: uri.replacingOccurrences(of: "&amp;", with: "&"))
            .svg(label: "QR code to scan with your authenticator app")
        #expect(setUp.text.contains(expected), "the page's QR code encodes the otpauth URI")
        #expect(setUp.text.contains("autocomplete=\"one-time-code\"") && !setUp.text.contains("<script"))
        let enrollment = try #require(TestBrowser.hiddenField("enrollment", in: setUp.text))
        let key = try #require(TestServer.totpKey(fromBase32: base32))
        #expect(try await server.server.store.factors(userId: try await AccountPageRig.ada(server).id).isEmpty, "nothing is on yet")

        // A wrong code keeps the same set-up: the app already holds its key.
        let right = server.totpCode(key)
        // A code of no step the server accepts (the current one, or one either side).
        let accepted = Set([-30.0, 0, 30].map { server.totpCode(key, offsetSeconds: $0) })
        let wrongCode = try #require(["000000", "111111", "222222", "333333"].first { !accepted.contains($0) })
        let wrong = try await AccountPageRig.post(
            server, browser, "/account/security/totp/verify", ["enrollment": enrollment, "code": wrongCode])
        #expect(wrong.status == 400 && wrong.text.contains("That code is not right.") && wrong.text.contains(shownKey))
        #expect(TestBrowser.hiddenField("enrollment", in: wrong.text) == enrollment)
        let empty = try await AccountPageRig.post(server, browser, "/account/security/totp/verify", ["enrollment": enrollment, "code": " "])
        #expect(empty.status == 400)

        let confirmed = try await AccountPageRig.post(server, browser, "/account/security/totp/verify", ["enrollment": enrollment, "code": right])
        #expect(confirmed.status == 303, "\(confirmed.text.prefix(300))")
        let after = try await browser.get(server.base + (try #require(confirmed.location)))
        #expect(after.text.contains("Your authenticator app is set up.") && after.text.contains("<th scope=\"row\">Authenticator app"))
        #expect(!after.text.contains(base32), "the key is shown once")
        let ada = try await AccountPageRig.ada(server)
        #expect(try await server.server.store.factors(userId: ada.id).map(\.secret) == [key])
        // The enrollment is spent: sent again, with the code, a wrong one or none, it starts over from the security page
        // and never shows the key of the authenticator that is now on.
        for code in [right, wrongCode, ""] {
            let replay = try await AccountPageRig.post(server, browser, "/account/security/totp/verify", ["enrollment": enrollment, "code": code])
            #expect(replay.status == 400 && replay.text.contains("This set-up has expired."), "\(code): \(replay.status)")
            #expect(!replay.text.contains(shownKey) && !replay.text.contains(base32) && !replay.text.contains("otpauth:"))
        }
        #expect(try await Self.notices(server) == ["An authenticator app was added to your account"])
        let events = try await server.server.store.auditEvents(AuditQuery(subject: ada.id, types: [.mfaEnrolled], limit: 10))
        #expect(events.map(\.outcome).sorted { $0.rawValue < $1.rawValue } == [.failure, .success])
        #expect(events.allSatisfy { $0.clientId == AccountClient.id })
    }

    @Test func emailedCodesAndRecoveryCodesShownOnce() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let (browser, page) = try await AccountPageRig.signIn(server, path: "/account/security")
        #expect(page.text.contains("Set up a second sign-in step first"), "no recovery codes without a step to stand in for")
        #expect(!page.text.contains("action=\"/account/security/recovery-codes\""))

        let email = try await AccountPageRig.post(server, browser, "/account/security/email-codes")
        #expect(email.status == 303)
        let withEmail = try await browser.get(server.base + (try #require(email.location)))
        #expect(withEmail.text.contains("Signing in now sends a code to your email address."))
        #expect(withEmail.text.contains("<th scope=\"row\">Codes by email") && !withEmail.text.contains("action=\"/account/security/email-codes\""))

        let generated = try await AccountPageRig.post(server, browser, "/account/security/recovery-codes")
        #expect(generated.status == 200 && generated.header("Cache-Control") == "no-store")
        let list = try #require(generated.text.firstMatch(of: #/<ol class="codes" dir="ltr" id="recovery-codes">(.*?)</ol>/#).map { String($0.1) })
        let codes = list.matches(of: #/<bdi>([^<]+)</bdi>/#).map { String($0.1) }
        #expect(codes.count == 10 && Set(codes).count == 10, "\(codes)")
        let security = try await browser.get(server.base + "/account/security")
        #expect(security.text.contains("10 of 10 codes left") && codes.allSatisfy { !security.text.contains($0) }, "shown once")
        #expect(security.text.contains("Create new recovery codes"))
        // The codes are the account's (their digests), and a used one is counted on the page.
        let ada = try await AccountPageRig.ada(server)
        let digest = server.server.accounts.recoveryCodeDigest(codes[3])
        #expect(try await server.server.store.useRecoveryCode(userId: ada.id, digest: digest, at: Date()))
        #expect(try await browser.get(server.base + "/account/security").text.contains("9 of 10 codes left"))
        let subjects = try await Self.notices(server)
        #expect(subjects.sorted() == ["New recovery codes were created for your account", "Sign-in codes by email were turned on"], "\(subjects)")
    }

    @Test func theLastStepStaysWhileAnApplicationSignedInToRequiresOne() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        // Ada is signed in to the demo application, which then requires a second step; the page itself requires none.
        let demoApp = try await server.userTokens(username: "ada@example.com", password: AccountPageRig.adaPassword)
        let (browser, _) = try await AccountPageRig.signIn(server, path: "/account/security")
        #expect(try await AccountPageRig.post(server, browser, "/account/security/email-codes").status == 303)
        var client = try #require(try await server.server.store.client(id: "latchkey-demo"))
        client.configuration.requireMFA = true
        try await server.server.store.upsertClient(client)

        let refused = try await AccountPageRig.post(server, browser, "/account/security/remove", ["kind": "email"])
        #expect(refused.status == 409, "\(refused.status)")
        #expect(refused.text.contains("You can&#39;t remove your only second step: it is required by \(HTML.escape(client.configuration.name))"))
        let ada = try await AccountPageRig.ada(server)
        #expect(try await server.server.store.factors(userId: ada.id).map(\.kind) == [.emailOTP])
        // The JSON API says the same to a token of the page's own application, which requires none.
        let listed = try await server.call("GET", "/users/me/factors", token: try AccountPageRig.token(browser))
        #expect(try listed.value("mfaRequired") as? Bool == true, "\(listed.text)")

        // Signed out of that application, the step can go, and the recovery codes with it.
        #expect(!demoApp.accessToken.isEmpty)
        let grants = try await server.server.store.userSessions(userId: try await AccountPageRig.ada(server).id, now: Date()).grants
        let demoGrant = try #require(grants.first { $0.family.clientId == "latchkey-demo" })
        #expect(try await AccountPageRig.post(server, browser, "/account/sessions/revoke", ["grant": demoGrant.family.id]).status == 303)
        let removed = try await AccountPageRig.post(server, browser, "/account/security/remove", ["kind": "email"])
        #expect(removed.status == 303)
        #expect(try await browser.get(server.base + (try #require(removed.location))).text.contains("The sign-in step was removed."))
        #expect(try await server.server.store.factors(userId: ada.id).isEmpty)
        let events = try await server.server.store.auditEvents(AuditQuery(subject: ada.id, types: [.mfaRemoved], limit: 10))
        #expect(events.map { $0.details["reason"] ?? "-" }.sorted() == ["-", "last_factor"])
        #expect(try await Self.notices(server).sorted() == ["Sign-in codes by email were turned off", "Sign-in codes by email were turned on"])
    }

    @Test func changesOfSignInStepsNeedARecentSignIn() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        server.freezeClock()
        let (browser, _) = try await AccountPageRig.signIn(server, path: "/account/security")
        #expect(try await AccountPageRig.post(server, browser, "/account/security/email-codes").status == 303)
        let setUp = try await AccountPageRig.post(server, browser, "/account/security/totp")
        let enrollment = try #require(TestBrowser.hiddenField("enrollment", in: setUp.text))
        server.advanceClock(301)
        let page = try await browser.get(server.base + "/account/security")
        #expect(page.text.contains("To add or remove a sign-in step, first confirm it&#39;s you."))
        #expect(page.text.contains("/account/login?fresh=1&amp;return=/account/security"))
        #expect(page.text.contains("disabled aria-describedby=\"fresh\""), "the buttons are off until then")
        #expect(page.text.contains("action=\"/account/security/password\""), "the password form needs the current password, not a fresh sign-in")
        let changes: [(String, [String: String])] = [
            ("/account/security/totp", [:]), ("/account/security/totp/verify", ["enrollment": enrollment, "code": "123456"]),
            ("/account/security/recovery-codes", [:]), ("/account/security/remove", ["kind": "email"])
        ]
        for (path, fields) in changes {
            let stale = try await AccountPageRig.post(server, browser, path, fields)
            #expect(stale.status == 401 && stale.text.contains("Confirm it&#39;s you"), "\(path): \(stale.status)")
        }
        let ada = try await AccountPageRig.ada(server)
        #expect(try await server.server.store.factors(userId: ada.id).map(\.kind) == [.emailOTP])
        #expect(try await server.server.store.recoveryCodes(userId: ada.id) == nil)
    }

    @Test func aPasswordChangeIsMailed() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let (browser, _) = try await AccountPageRig.signIn(server, path: "/account/security")
        let changed = try await AccountPageRig.post(
            server, browser, "/account/security/password",
            ["current_password": AccountPageRig.adaPassword, "new_password": "a brand new passphrase"])
        #expect(changed.status == 303)
        let mail = try #require(try await server.server.outboxMessages(recipient: "ada@example.com").first)
        #expect(mail.subject == "Your password was changed" && !mail.body.contains("a brand new passphrase"))
    }
}
