import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeySwiftUI
import Testing

/// The profile form's view model (the vendor's `UserProfile` / `BaseUserProfile`) against the real server's SCIM
/// `/scim2/Me`: load, edit, save only what changed, validation errors kept with the edits, and a concurrent change
/// (If-Match refused with 412) shown and recovered from.
@MainActor
@Suite("SwiftUI view models: the profile form")
struct UserProfileModelTests {
    @Test("load, edit, save: only the changed field is sent, the saved profile is shown, the state's user follows")
    func loadEditSave() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = try await server.signedInUIState()
        let model = UserProfileModel(state: state, fields: [.displayName, .givenName, .phoneNumbers])
        #expect(model.profile == nil && !model.hasChanges)
        await model.load()
        #expect(model.profile?.userName == "demo@example.com" && model.value(for: "displayName") == "Demo User")
        #expect(model.value(for: "given_name") == "Demo" && !model.hasChanges && model.error == nil)
        let version = model.profile?.version

        var saved = 0
        model.onSaved = { saved += 1 }
        model.setValue("Ada Demo", for: "displayName")
        model.setValue("+44 20 7946 0000", for: "phoneNumbers")
        #expect(model.changedKeys == ["displayName", "phoneNumbers"])
        await model.save()
        #expect(model.error == nil && model.didSave && saved == 1 && !model.hasChanges)
        #expect(model.profile?.displayName == "Ada Demo" && model.profile?.phoneNumber == "+44 20 7946 0000")
        #expect(model.profile?.givenName == "Demo", "an unchanged field is left alone")
        #expect(model.profile?.version != version)
        try await eventually { state.user?.displayName == "Ada Demo" }
        #expect(state.user?.displayName == "Ada Demo")

        await model.save()  // nothing changed: no request, still saved
        #expect(model.didSave && saved == 1)
    }

    @Test("validation errors: the server's explanation, at the field it names; the edit stays; a taken address too")
    func validationErrors() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let state = try await server.signedInUIState()
        let model = UserProfileModel(state: state, fields: [.displayName, .email])
        var failures = 0
        model.onError = { failures += 1 }
        await model.load()
        model.setValue("not an address", for: "email")
        await model.save()
        #expect(model.errorCode == .invalidInput && model.errorField == "email" && failures == 1)
        #expect(model.error?.contains("not a valid email") == true, "\(model.error ?? "")")
        #expect(model.value(for: "email") == "not an address" && model.hasChanges && !model.didSave)
        model.setValue("ada@example.com", for: "email")
        #expect(model.errorField == nil, "editing the field clears its mark")
        await model.save()
        #expect(model.errorCode == .userAlreadyExists && model.error != nil && failures == 2)
        // Put back, the form saves the rest and the error goes away.
        model.setValue("demo@example.com", for: "email")
        model.setValue("Demo Again", for: "displayName")
        await model.save()
        #expect(model.error == nil && model.errorCode == nil && model.profile?.displayName == "Demo Again" && model.didSave)
    }

    @Test("a change made elsewhere between load and save: refused (412), shown, the latest loaded with the edit kept; saving again works")
    func concurrentChange() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = try await server.signedInUIState()
        let model = UserProfileModel(state: state, fields: [.displayName, .givenName])
        await model.load()
        let loadedVersion = model.profile?.version

        // Another device renames the user after this form loaded.
        let otherDevice = try await server.signedInClient()
        _ = try await otherDevice.updateUserProfile(payload: ["given_name": .string("Changed Elsewhere")])

        model.setValue("Mine", for: "displayName")
        await model.save()
        #expect(model.errorCode == .profileConflict && model.error == UIStrings.text(.profileConflict, language: "en"))
        #expect(model.profile?.version != loadedVersion, "the latest version is loaded")
        #expect(model.value(for: "given_name") == "Changed Elsewhere", "the other change is shown")
        #expect(model.value(for: "displayName") == "Mine" && model.hasChanges, "the user's edit is kept")
        let afterConflict = try await otherDevice.getUserProfile()
        #expect(afterConflict.displayName == "Demo User", "nothing was overwritten")

        await model.save()
        #expect(model.error == nil && model.didSave)
        let final = try await otherDevice.getUserProfile()
        #expect(final.displayName == "Mine" && final.givenName == "Changed Elsewhere", "both changes survive")
    }

    @Test("not signed in: load fails with the session message and onError")
    func signedOut() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = server.uiState()
        await state.start()
        let model = UserProfileModel(state: state)
        var failed = false
        model.onError = { failed = true }
        await model.load()
        #expect(model.profile == nil && model.errorCode == .sessionExpired && failed)
        #expect(model.error == UIStrings.text(.sessionExpired, language: "en"))
    }
}
