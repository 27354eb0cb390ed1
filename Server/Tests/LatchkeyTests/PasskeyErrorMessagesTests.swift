import Foundation
@testable import Latchkey
import Testing

/// Passkey-first in the core: the person's words for the passkey outcomes the SDK raises itself, in every language,
/// chosen from the client's languages; the new codes' ReachFive categories; AutoFill on the software provider; the
/// default of conditional registration.
@Suite("Passkey errors: codes, categories and the person's words in 15 languages")
struct PasskeyErrorMessagesTests {
    static let texts = PasskeyErrorMessages.codes.flatMap { code in LanguagePreferences.sdkLanguages.map { (code, $0) } }

    @Test("every language has every message, written for a person (no codes, no developer terms), none an English copy")
    func everyLanguageHasEveryMessage() {
        #expect(LanguagePreferences.sdkLanguages.count == 15)
        #expect(Set(PasskeyErrorMessages.tables.keys) == Set(LanguagePreferences.sdkLanguages))
        #expect(
            Set(PasskeyErrorMessages.codes)
                == [
                    .passkeyCanceled, .passkeyNoCredential, .passkeyDomainNotAssociated, .passkeyRequestInProgress, .passkeyNotSupported,
                    .passkeyAlreadyRegistered
                ])
        for language in LanguagePreferences.sdkLanguages {
            #expect(PasskeyErrorMessages.tables[language]?.count == PasskeyErrorMessages.Key.allCases.count, "\(language)")
            for code in PasskeyErrorMessages.codes {
                let text = PasskeyErrorMessages.message(for: code, language: language) ?? ""
                #expect(!text.isEmpty, "\(language).\(code)")
                for jargon in ["PASSKEY_", "ASAuthorization", "RP ID", "webcredentials", "apple-app-site", "1004", "1006", "_"] {
                    #expect(!text.contains(jargon), "\(language).\(code) says \(jargon)")
                }
                if language != "en" {
                    #expect(text != PasskeyErrorMessages.message(for: code, language: "en"), "\(language).\(code) is English")
                }
            }
        }
        #expect(PasskeyErrorMessages.message(for: .passkeyFailed, language: "en") == nil, "only the catalog's codes have words")
    }

    @Test("the language is the first of the client's the SDK speaks: regions, scripts, Chinese variants, English last")
    func languageChoice() {
        let cases: [([String], String)] = [
            (["fr-CA"], "fr"), (["pt_BR"], "pt"), (["zh-TW"], "zh-Hant"), (["zh-HK"], "zh-Hant"), (["zh-Hant-CN"], "zh-Hant"),
            (["zh-Hans-HK"], "zh-Hans"), (["zh"], "zh-Hans"), (["sw", "de-AT"], "de"), (["tlh"], "en"), ([], "en"), (["AR"], "ar")
        ]
        for (tags, expected) in cases { #expect(LanguagePreferences.sdkLanguage(for: tags) == expected, "\(tags)") }
        #expect(
            PasskeyErrorMessages.message(for: .passkeyNoCredential, preferredLanguages: ["sw", "ja-JP"])
                == PasskeyErrorMessages.japanese[.noCredential])
        #expect(PasskeyErrorMessages.message(for: .passkeyCanceled, language: "de-CH") == PasskeyErrorMessages.german[.canceled])
    }

    @Test("the SDK's own passkey errors get the words; a server's message is never replaced; other codes get none")
    func attachingTheWords() {
        let own = LatchkeyError(.passkeyDomainNotAssociated, "the app is not associated with id.example.com")
            .withPasskeyUserMessage(preferredLanguages: ["ko"])
        #expect(own.userMessage == PasskeyErrorMessages.korean[.domainNotAssociated])
        #expect(own.errorUserMsg == own.userMessage && own.errorDescription == own.userMessage)
        #expect(own.message.contains("id.example.com"), "the developer's message stays")

        var api = LatchkeyError.ApiError()
        api.errorUserMsg = "Le serveur a refusé."
        let fromServer = LatchkeyError(.passkeyNoCredential, "unknown passkey", statusCode: 401, apiError: api)
            .withPasskeyUserMessage(preferredLanguages: ["en"])
        #expect(fromServer.userMessage == "Le serveur a refusé." && fromServer.errorUserMsg == "Le serveur a refusé.")

        #expect(LatchkeyError(.passkeyFailed, "x").withPasskeyUserMessage(preferredLanguages: ["en"]).userMessage == nil)
        #expect(LatchkeyError(.networkError, "x").withPasskeyUserMessage(preferredLanguages: ["en"]).errorUserMsg == nil)
    }

    @Test("the new codes: raw values, ReachFive categories, the superseded cancellation")
    func codesAndCategories() {
        #expect(LatchkeyError.Code.passkeyDomainNotAssociated.rawValue == "PASSKEY_DOMAIN_NOT_ASSOCIATED")
        #expect(LatchkeyError.Code.passkeyRequestInProgress.rawValue == "PASSKEY_REQUEST_IN_PROGRESS")
        #expect(LatchkeyError.Code.passkeyAlreadyRegistered.rawValue == "PASSKEY_ALREADY_REGISTERED")
        #expect(LatchkeyError(.passkeyDomainNotAssociated, "x").category == .technicalError)
        #expect(LatchkeyError(.passkeyRequestInProgress, "x").category == .technicalError)
        #expect(LatchkeyError(.passkeyNotSupported, "x").category == .technicalError)
        #expect(LatchkeyError(.passkeyAlreadyRegistered, "x").category == .requestError)
        let superseded = LatchkeyError(.canceled, "a newer request took over", underlying: CredentialRequestSuperseded())
        #expect(superseded.isSuperseded && superseded.category == .authCanceled)
        #expect(!LatchkeyError(.canceled, "closed").isSuperseded)
        #expect(!LatchkeyError(.unknownError, "x", underlying: CredentialRequestSuperseded()).isSuperseded)
    }

    static let origin = "https://login.example.com"
    static let creation = PublicKeyCredentialCreationOptions(
        rp: .init(id: "example.com", name: "Example"), user: .init(id: Data("user-1".utf8), name: "ada", displayName: "Ada"),
        challenge: Data("register-challenge".utf8), pubKeyCredParams: [.init(alg: -7)], authenticatorSelection: .init(residentKey: "required"),
        attestation: "none")

    @Test("AutoFill on the software provider: an immediate, discoverable passkey assertion; .canceled at once without one")
    func softwareAutoFill() async throws {
        let authenticator = SoftwareAuthenticator()
        let provider = SoftwareCredentialProvider(
            authenticator: authenticator, passwords: [.init(username: "ada", password: "analytical engine")])
        let options = PublicKeyCredentialRequestOptions(
            challenge: Data("login-challenge".utf8), rpId: "example.com", allowCredentials: [PublicKeyCredentialDescriptor(id: Data([9, 9]))],
            userVerification: "preferred")
        let request = CredentialRequest(
            types: [.Password, .Passkey], mode: .Always, passkeyOptions: options, origin: Self.origin, presentation: .autoFill)
        #expect(CredentialRequest(types: [.Passkey], mode: .Always, passkeyOptions: options, origin: Self.origin).presentation == .modal)

        await #expect {
            try await provider.credential(for: request)
        } throws: {
            ($0 as? LatchkeyError)?.code == .canceled
        }
        let created = try await authenticator.createCredential(for: Self.creation, origin: Self.origin)
        // The allow list is dropped (AutoFill offers any passkey of the relying party), and the password is not offered.
        guard case .passkey(let assertion) = try await provider.credential(for: request) else {
            Issue.record("AutoFill answered with something other than a passkey")
            return
        }
        #expect(assertion.rawId == created.rawId)
    }

    @Test("an authenticator without conditional registration says so, and the default answers .notOffered(.unsupportedOS)")
    func conditionalRegistrationDefault() async throws {
        let authenticator = SoftwareAuthenticator()
        #expect(!authenticator.supportsConditionalRegistration)
        guard case .notOffered(.unsupportedOS) = try await authenticator.createCredentialConditionally(for: Self.creation, origin: Self.origin)
        else {
            Issue.record("a software authenticator offered a conditional registration")
            return
        }
        #expect(try await authenticator.credentials().isEmpty)
    }
}
