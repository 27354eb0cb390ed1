import LatchkeyTestSupport
import Foundation
import Latchkey
@testable import LatchkeyServer
import LatchkeySwiftUI
import Testing

/// `SecondFactorsView`'s model against the real server's `/users/me/factors`: an authenticator app from its setup key
/// to its removal, a wrong code keeping the setup open, recovery codes shown once, the last required factor kept, a
/// sign-in too old for a change turned into "sign in again" with nothing changed, and the texts in another language.
@MainActor
@Suite("SwiftUI view models: second factors")
struct SecondFactorsModelTests {
    @Test("add an authenticator app (a wrong code keeps the setup), create recovery codes shown once, remove it after a confirmation")
    func authenticatorAppToRemoval() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let state = try await server.signedInUIState()
        let model = SecondFactorsModel(state: state)
        await model.load()
        #expect(model.factors?.factors.isEmpty == true && model.notice == nil)
        #expect(model.title == "Two-step verification" && model.emptyText.hasPrefix("No second step yet"))
        #expect(model.canAddAuthenticatorApp && model.canTurnOnEmailCodes && !model.canCreateRecoveryCodes)

        await model.startAuthenticatorApp()
        let setup = try #require(model.authenticatorSetup)
        #expect(model.isAddingAuthenticatorApp && setup.uri.scheme == "otpauth")
        #expect(model.setupKey?.replacingOccurrences(of: " ", with: "") == setup.secret)
        #expect(model.setupKey?.split(separator: " ").allSatisfy { $0.count <= 4 } == true)
        model.code = "12 34"
        #expect(!model.canVerifyCode, "six digits are needed")
        for notDigits in ["12345½", "①23456", "五23456", "12345a"] {
            model.code = notDigits
            #expect(!model.canVerifyCode, "\(notDigits)")
        }
        let right = server.totpCode(try #require(TestServer.totpKey(fromBase32: setup.secret)))
        model.code = right == "000000" ? "111111" : "000000"
        await model.confirmAuthenticatorApp()
        #expect(model.notice?.kind == .failed && model.notice?.code == .mfaFailed, "\(String(describing: model.notice))")
        #expect(model.authenticatorSetup == setup && model.code.isEmpty, "a wrong code keeps the setup for the next one")
        // As an Arabic number pad types it: the same digits in another script, sent as ASCII.
        model.code = String(right.compactMap { digit in digit.wholeNumberValue.flatMap { UnicodeScalar(0x0660 + UInt32($0)) }.map(Character.init) })
        #expect(model.canVerifyCode && model.code.count == 6 && model.code != right)
        await model.confirmAuthenticatorApp()
        #expect(model.notice == AccountNotice(kind: .done, message: "Authenticator app added."))
        #expect(model.authenticatorSetup == nil && !model.isAddingAuthenticatorApp)
        #expect(model.factors?.factors.map(\.kind) == [.totp] && !model.canAddAuthenticatorApp && model.canCreateRecoveryCodes)
        #expect(model.detail(of: try #require(model.factors?.factors.first)).hasPrefix("Added "))

        #expect(model.createRecoveryCodesLabel == "Create recovery codes")
        await model.requestRecoveryCodes()
        #expect(!model.isConfirmingReplacement, "no set yet: nothing to confirm")
        let codes = try #require(model.newRecoveryCodes)
        #expect(codes.codes.count == 10 && model.isShowingRecoveryCodes)
        #expect(model.recoveryCodesText?.split(separator: "\n").map(String.init) == codes.codes)
        #expect(model.recoveryCodesSummary == "10 of 10 left" && !model.recoveryCodesAreLow)
        #expect(model.createRecoveryCodesLabel == "Create new recovery codes")
        model.isShowingRecoveryCodes = false  // the sheet was closed
        #expect(model.newRecoveryCodes == nil && model.recoveryCodesText == nil, "shown once, then forgotten")
        await model.requestRecoveryCodes()
        #expect(model.isConfirmingReplacement && model.newRecoveryCodes == nil, "a set exists: asked first")
        #expect(model.replacementTitle == "Create new recovery codes?" && model.replacementWarning.contains("stop working"))
        await model.createRecoveryCodes()
        #expect(!model.isConfirmingReplacement && model.newRecoveryCodes?.codes.count == 10 && model.newRecoveryCodes != codes)
        model.dismissRecoveryCodes()

        model.askToRemove(.totp)
        #expect(model.isConfirmingRemoval && model.removalTitle == "Remove Authenticator app?")
        #expect(model.removalWarning.contains("recovery codes"))
        model.isConfirmingRemoval = false  // cancelled
        #expect(model.removal == nil && model.factors?.factors.count == 1)
        model.askToRemove(.totp)
        // SwiftUI's order: the dialog closes (clearing `removal`) before the button's task runs.
        model.isConfirmingRemoval = false
        await model.remove(.totp)
        #expect(model.notice == AccountNotice(kind: .done, message: "Authenticator app removed."))
        #expect(model.factors?.factors.isEmpty == true && model.factors?.recoveryCodes == nil, "the codes went with the last factor")
        let id = try #require(try await server.server.user(username: "demo@example.com")).id
        #expect(try await server.server.store.factors(userId: id).isEmpty)
    }

    @Test("where the application requires a second factor, the last usable one cannot be removed; with email codes on, it can")
    func lastRequiredFactor() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let state = try await server.signedInUIState()
        // After the sign-in: an authenticator app, and the application now requires a second factor.
        let id = try #require(try await server.server.user(username: "demo@example.com")).id
        _ = try await server.server.enrollTOTP(userId: id)
        var client = try #require(try await server.server.store.client(id: "latchkey-demo"))
        client.configuration.requireMFA = true
        try await server.server.store.upsertClient(client)
        let model = SecondFactorsModel(state: state)
        await model.load()
        #expect(model.factors?.isRequired == true && !model.canRemove(.totp))
        #expect(model.removalHint(.totp) == "A second step is required: add another one before removing this one.")

        await model.turnOnEmailCodes()
        #expect(model.notice == AccountNotice(kind: .done, message: "Codes by email added."), "\(String(describing: model.notice))")
        #expect(model.factors?.factors.map(\.kind) == [.totp, .email] && model.canRemove(.totp) && model.removalHint(.totp) == nil)
        #expect(!model.canTurnOnEmailCodes)
    }

    @Test("a sign-in too old for a change: 'sign in again', onSignInRequired, no setup shown; reading still works")
    func tooOldASignIn() async throws {
        let (server, state) = try await TestServer.signedInWithOneMinuteRecentAuth()
        defer { Task { await server.stop() } }
        server.advanceClock(61)
        var asked = 0
        let model = SecondFactorsModel(state: state, onSignInRequired: { asked += 1 })
        await model.load()
        #expect(model.factors != nil && model.notice == nil)
        await model.startAuthenticatorApp()
        #expect(
            model.notice
                == AccountNotice(
                    kind: .needsSignIn, message: "For your security, sign in again, then try once more.", code: .reauthenticationRequired))
        #expect(asked == 1 && model.authenticatorSetup == nil && state.diagnosis == nil && state.isSignedIn)
        await model.createRecoveryCodes()
        #expect(model.notice?.kind == .needsSignIn && asked == 2 && model.newRecoveryCodes == nil)
    }

    @Test("a setup whose first code comes after the sign-in got too old is closed and its key forgotten")
    func setupClosedWhenTheSignInAges() async throws {
        let (server, state) = try await TestServer.signedInWithOneMinuteRecentAuth()
        defer { Task { await server.stop() } }
        var asked = 0
        let model = SecondFactorsModel(state: state, onSignInRequired: { asked += 1 })
        await model.load()
        await model.startAuthenticatorApp()
        let setup = try #require(model.authenticatorSetup)
        server.advanceClock(61)
        model.code = server.totpCode(try #require(TestServer.totpKey(fromBase32: setup.secret)))
        await model.confirmAuthenticatorApp()
        #expect(model.notice?.kind == .needsSignIn && asked == 1, "\(String(describing: model.notice))")
        #expect(model.authenticatorSetup == nil && !model.isAddingAuthenticatorApp && model.code.isEmpty, "the app can show its sign-in")
        #expect(model.factors?.factors.isEmpty == true)
    }

    @Test("in French: the title, the factor's name in the outcome, the day it was added")
    func french() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let state = try await server.signedInUIState(locale: "fr")
        let model = SecondFactorsModel(state: state)
        await model.load()
        #expect(model.title == UIStrings.text(.secondFactors, language: "fr") && model.title != "Two-step verification")
        await model.turnOnEmailCodes()
        let name = UIStrings.text(.emailCodes, language: "fr")
        #expect(model.notice?.kind == .done && model.notice?.message.contains(name) == true, "\(String(describing: model.notice))")
        #expect(model.notice?.message.contains("{factor}") == false)
        let factor = try #require(model.factors?.factors.first)
        let day = DateFormatter()
        day.locale = Locale(identifier: "fr")
        day.dateStyle = .medium
        #expect(model.detail(of: factor).contains(day.string(from: factor.createdAt)) && !model.detail(of: factor).contains("{date}"))
    }
}
