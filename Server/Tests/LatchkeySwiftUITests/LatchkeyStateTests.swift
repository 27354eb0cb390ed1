import LatchkeyTestSupport
import Foundation
import Latchkey
import LatchkeySwiftUI
import Testing

/// `LatchkeyState` (the vendor's `ThunderIDState`) against the real server: cold starts with and without a stored
/// session, a session that ended while the app was closed, sign-in and sign-out done through the client, `isLoading`,
/// and two sign-outs at once.
@MainActor
@Suite("SwiftUI view models: the auth state")
struct LatchkeyStateTests {
    @Test("cold start without a session: initialized, signed out, no error, not loading")
    func coldStartSignedOut() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = server.uiState()
        #expect(!state.isInitialized && !state.isLoading)
        #expect(!state.showsSignedOutContent && !state.showsSignedInContent, "nothing before the stored session was looked for")
        await state.start()
        #expect(state.isInitialized && !state.isSignedIn && state.user == nil && state.error == nil && !state.isLoading)
        #expect(state.showsSignedOutContent && !state.showsSignedInContent)
        await state.start()  // idempotent
        #expect(state.isInitialized && !state.isSignedIn)
    }

    @Test("cold start with a stored session: the user is restored; a configuration error is shown, not thrown")
    func coldStartRestores() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let storage = InMemoryStorageAdapter()
        _ = try await server.signedInClient(storage: storage)
        let state = server.uiState(storage: storage)
        await state.start()
        #expect(state.isSignedIn && state.user?.email == "demo@example.com" && state.error == nil)
        #expect(state.showsSignedInContent && !state.showsSignedOutContent)

        let broken = LatchkeyState(
            config: LatchkeyConfig(baseUrl: "http://id.example.com", clientId: "app"),
            i18n: LatchkeyI18n(locale: "en", store: InMemoryLocaleStore()))
        await broken.start()
        #expect(broken.isInitialized && !broken.isSignedIn && broken.lastError?.code == .invalidConfiguration && broken.error != nil)
    }

    @Test("a session that ended while the app was closed: signed out with a message, which the next sign-in clears")
    func endedSessionAtColdStart() async throws {
        // Access tokens inside the SDK's refresh margin: the restore must refresh, and the refresh is refused.
        let server = try await startServer { $0.lifetimes.accessToken = 10 }
        defer { Task { await server.stop() } }
        let storage = SnapshotStorage()
        let other = try await server.signedInClient(storage: storage)
        let saved = await storage.snapshot()
        #expect(!saved.isEmpty)
        try await other.signOut()  // revokes the refresh token on the server…
        await storage.restore(saved)  // …while the device still holds it

        let state = server.uiState(storage: storage)
        await state.start()
        #expect(state.isInitialized && !state.isSignedIn && state.user == nil)
        #expect(state.lastError?.code == .sessionExpired)
        #expect(state.error == UIStrings.text(.sessionExpired, language: "en"))
        #expect(await storage.snapshot().isEmpty, "the dead session was forgotten")

        _ = try await state.client.handleRedirectCallback(url: try await server.browse(try state.client.buildSignInURL()))
        try await eventually { state.isSignedIn }
        #expect(state.isSignedIn && state.error == nil && state.lastError == nil)
    }

    @Test(
        "a session ended elsewhere while its access token is still valid: the server check shows it signed out at launch; trusting the stored tokens does not",
        arguments: [LatchkeyState.SessionCheck.server, .storedTokens])
    func endedSessionWithAFreshAccessToken(check: LatchkeyState.SessionCheck) async throws {
        let server = try await TestServer.start()  // access tokens for an hour: no refresh is due at launch
        defer { Task { await server.stop() } }
        let storage = SnapshotStorage()
        let other = try await server.signedInClient(storage: storage)
        let saved = await storage.snapshot()
        try await other.signOut()  // both tokens revoked on the server…
        await storage.restore(saved)  // …while the device still holds them

        let state = server.uiState(storage: storage, sessionCheck: check)
        await state.start()
        switch check {
        case .server:
            #expect(state.isInitialized && !state.isSignedIn && state.user == nil && !state.isStale)
            #expect(state.lastError?.code == .sessionExpired || state.lastError?.code == .invalidGrant)
            #expect(state.error == UIStrings.text(.sessionExpired, language: "en"))
            #expect(await storage.snapshot().isEmpty, "the dead session was forgotten")
        case .storedTokens:
            #expect(state.isSignedIn && state.user?.email == "demo@example.com" && state.error == nil, "nothing asked the server")
        }
    }

    @Test("the server check at launch loads the user from the server, and refresh() notices a session ended elsewhere while the app runs")
    func serverCheckAndRefresh() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let storage = SnapshotStorage()
        let other = try await server.signedInClient(storage: storage)
        let device = SnapshotStorage()  // this app's copy of the session
        await device.restore(await storage.snapshot())
        // Renamed elsewhere after this copy's ID token was issued: only the server knows the new name.
        _ = try await other.updateUserProfile(payload: ["name": .string("Renamed Elsewhere")])

        let state = server.uiState(storage: device)
        await state.start()
        #expect(state.isSignedIn && !state.isStale && state.user?.email == "demo@example.com" && state.error == nil)
        #expect(state.user?.displayName == "Renamed Elsewhere", "the user is the server's (userinfo), not the stored ID token's")

        // The other copy of the session signs out at the server (as another device ending this session would).
        try await other.signOut()
        #expect(state.isSignedIn, "nothing has told this state yet")
        await state.refresh()
        #expect(!state.isSignedIn && state.user == nil)
        #expect(state.error == UIStrings.text(.sessionExpired, language: "en"))
    }

    @Test("an offline launch with a fresh access token: the server check keeps the session, stale, with the network error")
    func offlineLaunchWithAFreshAccessToken() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let storage = InMemoryStorageAdapter()
        _ = try await server.signedInClient(storage: storage)
        let http = ProgrammableHTTPClient()
        let offline = http.rewriteRequests { $0.toClosedPort }
        let state = server.uiState(storage: storage, http: http)
        await state.start()
        #expect(state.isInitialized && state.isSignedIn && state.isStale)
        #expect(state.lastError?.code == .networkError && state.error == UIStrings.text(.networkError, language: "en"))

        http.remove(offline)
        await state.refresh()
        #expect(state.isSignedIn && !state.isStale && state.user?.email == "demo@example.com" && state.error == nil)
    }

    @Test("an offline launch: signed in but stale, with the network error; the first refresh that works confirms it and loads the user")
    func offlineLaunchIsStaleThenConfirmed() async throws {
        let server = try await startServer { $0.lifetimes.accessToken = 10 }  // the restore must refresh
        defer { Task { await server.stop() } }
        let storage = InMemoryStorageAdapter()
        _ = try await server.signedInClient(storage: storage)
        let http = ProgrammableHTTPClient()
        let offline = http.rewriteRequests { $0.toClosedPort }
        let state = server.uiState(storage: storage, http: http)
        await state.start()
        #expect(state.isInitialized && state.isSignedIn && state.isStale, "kept, and marked as not confirmed")
        #expect(state.showsSignedInContent, "the app shows the signed-in screen, not the sign-in form")
        #expect(state.lastError?.code == .networkError && state.error == UIStrings.text(.networkError, language: "en"))
        #expect(await storage.get("latchkey.session.default") != nil)

        http.remove(offline)
        _ = try await state.client.getAccessToken()  // the app's next API call, with the network back
        try await eventually { !state.isStale && state.user != nil }
        #expect(state.isSignedIn && state.user?.email == "demo@example.com" && state.error == nil)
    }

    @Test("sign-in and sign-out done through the client show in the state without refresh()")
    func followsTheClient() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let state = server.uiState()
        await state.start()
        #expect(!state.isSignedIn)
        _ = try await state.client.handleRedirectCallback(url: try await server.browse(try state.client.buildSignInURL()))
        try await eventually { state.user != nil }
        #expect(state.isSignedIn && state.user?.email == "demo@example.com")

        _ = try await state.client.updateUserProfile(payload: ["name": .string("Demo Renamed")])
        try await eventually { state.user?.displayName == "Demo Renamed" }
        #expect(state.user?.displayName == "Demo Renamed", "userUpdated reloads the user from userinfo")

        try await state.client.signOut()
        try await eventually { !state.isSignedIn }
        #expect(!state.isSignedIn && state.user == nil && state.error == nil)
        await state.refresh()
        #expect(!state.isSignedIn)
    }

    @Test("isLoading is true while starting and while signing out, false after")
    func loadingTransitions() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let http = ProgrammableHTTPClient()
        let state = try await server.signedInUIState(http: http, start: false)
        http.hold()
        let starting = Task { await state.start() }
        try await eventually { http.heldCount > 0 }
        #expect(state.isLoading && !state.isInitialized)
        http.release()
        await starting.value
        #expect(!state.isLoading && state.isInitialized && state.isSignedIn)

        http.hold()
        let signingOut = Task { await state.signOut() }
        try await eventually { http.heldCount > 0 }
        #expect(state.isLoading)
        http.release()
        await signingOut.value
        #expect(!state.isLoading && !state.isSignedIn)
    }

    @Test("two sign-outs at once are one sign-out: its two revocations and one end-session request")
    func concurrentSignOuts() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let http = ProgrammableHTTPClient()
        let state = try await server.signedInUIState(http: http)
        #expect(state.isSignedIn)
        let button = SignOutButtonModel(state: state)
        var completions = 0
        button.onSignOutComplete = { completions += 1 }
        async let first: Void = button.signOut()
        async let second: Void = state.signOut()
        _ = await (first, second)
        #expect(!state.isSignedIn && state.error == nil)
        #expect(
            http.requests(pathEndingWith: "/revoke").count == 2 && http.requests(pathEndingWith: "/logout").count == 1,
            "one sign-out: its two revocations (refresh, access) and one end-session")
        #expect(completions == 1)
    }

    @Test("setLocale changes the component texts, the language the client sends, and is kept for the next launch")
    func locale() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let store = InMemoryLocaleStore()
        var config = server.sdkConfig()
        config.preferredLanguages = ["en"]
        let state = LatchkeyState(config: config, i18n: LatchkeyI18n(locale: "en", store: store))
        await state.start()
        #expect(state.i18n.t(.signIn) == "Sign in")
        state.setLocale("ar")
        #expect(state.i18n.language == "ar" && state.i18n.isRightToLeft && state.i18n.t(.signIn) == UIStrings.text(.signIn, language: "ar"))
        #expect(try state.client.getConfiguration().preferredLanguages == ["ar"])
        #expect(store.load() == "ar")
        #expect(LatchkeyI18n(store: store).language == "ar", "the next launch starts in the kept language")
        state.i18n.setLocale("zh-TW")
        #expect(state.i18n.language == "zh-Hant")
        state.i18n.setLocale("  ")
        #expect(state.i18n.language == "zh-Hant", "an unusable tag changes nothing")
    }
}
