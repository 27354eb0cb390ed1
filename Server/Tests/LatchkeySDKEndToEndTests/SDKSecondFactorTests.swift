import Foundation
import LatchkeyTestSupport
import Latchkey
@testable import LatchkeyServer
import Testing

/// The SDK's second-factor calls against the real server over loopback: add an authenticator app with its first
/// code, make recovery codes, turn emailed codes on and off, and each refusal as the error an app can act on.
@Suite("SDK ↔ server: the account's own second factors")
struct SDKSecondFactorTests {
    @Test("an authenticator added with its first code, emailed codes on and off, the list as the server holds it")
    func managesFactors() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await server.signedInClient()
        #expect(try await client.secondFactors() == SecondFactors(factors: [], isRequired: false))
        do {
            _ = try await client.generateRecoveryCodes()
            Issue.record("recovery codes made for an account without a second factor")
        } catch let error as LatchkeyError {
            #expect(error.code == .invalidInput && error.serverCode == "MFA-1007" && error.statusCode == 409, "\(error)")
        }

        let enrollment = try await client.startTOTPEnrollment()
        #expect(enrollment.uri.scheme == "otpauth" && enrollment.uri.absoluteString.contains(enrollment.secret))
        let key = try #require(TestServer.totpKey(fromBase32: enrollment.secret))
        let right = server.totpCode(key)
        do {
            try await client.confirmTOTPEnrollment(enrollment, code: right == "000000" ? "111111" : "000000")
            Issue.record("a wrong first code turned the authenticator on")
        } catch let error as LatchkeyError {
            #expect(error.code == .mfaFailed && error.serverCode == "MFA-1001", "\(error)")
        }
        let added = try await client.confirmTOTPEnrollment(enrollment, code: right)
        #expect(added.kind == .totp && added.isUsable)
        do {
            try await client.confirmTOTPEnrollment(enrollment, code: right)
            Issue.record("an enrollment was confirmed twice")
        } catch let error as LatchkeyError {
            #expect(error.code == .confirmationCodeExpired, "\(error)")
        }

        // Recovery codes: shown once, counted in the list, never printed; a new set replaces the old.
        let recovery = try await client.generateRecoveryCodes()
        #expect(recovery.codes.count == 10 && Set(recovery.codes).count == 10)
        #expect(recovery.codes.allSatisfy { code in !"\(recovery)".contains(code) && !String(reflecting: recovery).contains(code) })
        let counted = try #require(try await client.secondFactors().recoveryCodes)
        #expect(counted.remaining == 10 && counted.total == 10 && counted.createdAt == recovery.createdAt, "\(counted)")
        let replaced = try await client.generateRecoveryCodes()
        #expect(Set(replaced.codes).isDisjoint(with: recovery.codes))

        #expect(try await client.enableEmailCodes().kind == .email)
        #expect(try await client.secondFactors().factors.map(\.kind) == [.totp, .email])
        try await client.removeSecondFactor(.email)
        #expect(try await client.secondFactors().factors.map(\.kind) == [.totp])
        do {
            try await client.removeSecondFactor(.email)
            Issue.record("a factor the account does not have was removed")
        } catch let error as LatchkeyError {
            #expect(error.code == .invalidInput && error.statusCode == 404, "\(error)")
        }
        #expect(!"\(enrollment)".contains(enrollment.secret) && !String(reflecting: enrollment).contains(enrollment.secret))

        // The application starts requiring MFA: its last factor stays, as an error the app can show.
        var app = try #require(try await server.server.store.client(id: "latchkey-demo"))
        app.configuration.requireMFA = true
        try await server.server.store.upsertClient(app)
        do {
            try await client.removeSecondFactor(.totp)
            Issue.record("the last factor an application requires was removed")
        } catch let error as LatchkeyError {
            #expect(error.code == .invalidInput && error.statusCode == 409 && error.userMessage != nil, "\(error)")
        }
    }

    @Test("a sign-in older than recent_auth_seconds: .reauthenticationRequired that says what to do, and nothing changes")
    func needsARecentSignIn() async throws {
        let server = try await TestServer.start { $0.recentAuthenticationSeconds = 60 }
        defer { Task { await server.stop() } }
        let client = try await server.signedInClient()
        server.freezeClock()
        server.advanceClock(61)
        do {
            _ = try await client.startTOTPEnrollment()
            Issue.record("an enrollment started with a sign-in too old")
        } catch let error as LatchkeyError {
            #expect(error.code == .reauthenticationRequired && error.message.contains("recent sign-in"), "\(error)")
        }
        do {
            try await client.enableEmailCodes()
            Issue.record("emailed codes turned on with a sign-in too old")
        } catch let error as LatchkeyError {
            #expect(error.code == .reauthenticationRequired, "\(error)")
        }
        do {
            _ = try await client.generateRecoveryCodes()
            Issue.record("recovery codes made with a sign-in too old")
        } catch let error as LatchkeyError {
            #expect(error.code == .reauthenticationRequired, "\(error)")
        }
        #expect(try await client.secondFactors().factors.isEmpty, "reading needs no recent sign-in")
    }
}
