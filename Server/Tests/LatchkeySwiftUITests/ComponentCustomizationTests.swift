import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeySwiftUI
import Testing

/// What an app changes about the components without rewriting them: its own words per key and language, the order
/// Return walks through a step's fields, and the preview state its canvas runs on (no server).
@MainActor
@Suite("SwiftUI: components an app makes its own")
struct ComponentCustomizationTests {
    @Test("per-key overrides: one language or all, a language's own wins, removable, used in error messages too")
    func stringOverrides() {
        let i18n = LatchkeyI18n(locale: "fr-CA", store: InMemoryLocaleStore())
        #expect(i18n.t(.signIn) == UIStrings.text(.signIn, language: "fr"))
        i18n.override(.signIn, with: "Log in")
        #expect(i18n.t(.signIn) == "Log in", "an every-language override applies in French too")
        i18n.override(.signIn, with: "Se connecter à Acme", language: "fr-FR")
        #expect(i18n.t(.signIn) == "Se connecter à Acme", "the language's own wins, whatever its region")
        i18n.setLocale("de")
        #expect(i18n.t(.signIn) == "Log in")
        i18n.override([.genericError: "Acme could not do that.", .signOut: "Leave"])
        #expect(i18n.message(for: LatchkeyError(.unknownError, "boom")) == "Acme could not do that.")
        #expect(i18n.checkMessages.required == UIStrings.text(.fieldRequired, language: "de"), "keys not overridden keep the SDK's")
        i18n.removeOverride(.signIn)
        #expect(i18n.t(.signIn) == UIStrings.text(.signIn, language: "de"))
        i18n.setLocale("fr")
        #expect(i18n.t(.signIn) == "Se connecter à Acme")
        #expect(i18n.t(.signOut) == "Leave")
    }

    @Test("Return moves from field to field without sending, and on the last field signs in")
    func returnWalksTheFields() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = server.uiState()
        let model = await AuthFlowModel.started(state)
        #expect(model.visibleInputs.map(\.identifier) == ["username", "password"])
        #expect(model.field(after: "username")?.identifier == "password" && model.field(after: "password") == nil)
        model.setValue("demo@example.com", for: "username")
        #expect(model.returnPressed(in: "username") == "password")
        #expect(model.phase == .step && !model.isLoading, "nothing was sent")
        model.setValue("correct horse battery staple", for: "password")
        #expect(model.returnPressed(in: "password") == nil)
        try await eventually("Return on the last field signs in") { model.phase == .completed }
        #expect(state.isSignedIn && state.user?.email == "demo@example.com")
    }

    @Test("Return skips pickers, and on a passkey step sends nothing")
    func returnSkipsPickers() {
        let step = EmbeddedFlowResponse(
            flowId: "f",
            inputs: [
                FlowInput(ref: "a", identifier: "email", type: "EMAIL_INPUT", required: true),
                FlowInput(ref: "b", identifier: "country", type: "SELECT", required: true, options: ["FR", "JP"]),
                FlowInput(ref: "c", identifier: "phone", type: "PHONE_INPUT", required: true)
            ],
            actions: [FlowAction(ref: "go", type: "SUBMIT")])
        let model = AuthFlowModel.preview(step: step)
        #expect(model.field(after: "email")?.identifier == "phone")
        #expect(model.returnPressed(in: "phone") == nil && model.phase == .step, "a preview sends nothing")
    }

    @Test("the preview state: started, signed in as given, a sign-in step, the user's profile, no request ever")
    func previewState() async throws {
        let signedOut = LatchkeyState.preview(locale: "ja")
        #expect(signedOut.isPreview && signedOut.isInitialized && !signedOut.isSignedIn && signedOut.showsSignedOutContent)
        await signedOut.start()
        let form = AuthFlowModel(state: signedOut)
        await form.start()
        #expect(form.phase == .step && form.visibleInputs.map(\.identifier) == ["username", "password"] && form.title == "Sign in")
        #expect(form.passkeyAction != nil)
        form.setValue("ada@example.com", for: "username")
        await form.perform(actionId: "action_submit")
        #expect(form.phase == .step && form.error == nil && signedOut.error == nil, "nothing was sent")

        let signUp = AuthFlowModel(state: signedOut, flowType: .registration)
        await signUp.start()
        #expect(signUp.visibleInputs.map(\.identifier) == ["email", "password"] && signUp.passkeyAction == nil)

        let signedIn = LatchkeyState.preview(user: .preview)
        #expect(signedIn.isSignedIn && signedIn.user?.displayName == "Ada Lovelace" && signedIn.showsSignedInContent)
        let profile = UserProfileModel(state: signedIn, fields: [.displayName, .givenName, .familyName])
        await profile.load()
        #expect(profile.error == nil && profile.fields["given_name"] == "Ada" && profile.fields["displayName"] == "Ada Lovelace")
        profile.setValue("Augusta Ada", for: "given_name")
        await profile.save()
        #expect(profile.didSave && profile.error == nil)
        await signedIn.signOut()
        #expect(!signedIn.isSignedIn && signedIn.user == nil && signedIn.error == nil)

        let custom = LatchkeyState.preview(
            error: "Your session has ended.",
            step: EmbeddedFlowResponse(flowId: "otp", inputs: [FlowInput(ref: "o", identifier: "otp", type: "OTP_INPUT", required: true)]))
        let otp = AuthFlowModel(state: custom)
        await otp.start()
        #expect(otp.visibleInputs.map(\.identifier) == ["otp"] && custom.error == "Your session has ended.")
    }

    @Test("accessibility identifiers are stable strings, independent of the language")
    func accessibilityIdentifiers() {
        #expect(LatchkeyAccessibilityID.input("username") == "latchkey.input.username")
        #expect(LatchkeyAccessibilityID.fieldError("password") == "latchkey.input.password.error")
        #expect(LatchkeyAccessibilityID.action("action_submit") == "latchkey.action.action_submit")
        #expect(LatchkeyAccessibilityID.profileField("givenName") == "latchkey.profile.givenName")
        let fixed = [
            LatchkeyAccessibilityID.title, LatchkeyAccessibilityID.error, LatchkeyAccessibilityID.notice, LatchkeyAccessibilityID.passkey,
            LatchkeyAccessibilityID.continueRedirect, LatchkeyAccessibilityID.startOver, LatchkeyAccessibilityID.signInButton,
            LatchkeyAccessibilityID.signOutButton, LatchkeyAccessibilityID.profileSave
        ]
        #expect(Set(fixed).count == fixed.count && fixed.allSatisfy { $0.hasPrefix("latchkey.") })
    }
}
