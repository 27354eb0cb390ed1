import AppleFrameworkStandIns
import Foundation
import Latchkey
import LatchkeyApple
import Testing

/// Seeds 000/001 `webviewLogin` and seed 003's URL + callback pair through `ASWebAuthenticationSession`'s stand-in,
/// against the real server: the scripted user signs in on the hosted page.
@Suite("LatchkeyApple: webviewLogin through ASWebAuthenticationSession")
struct WebAuthenticationSessionTests {
    let device = StandInDevice()

    @Test("success: the page is shown from the app's anchor, the custom-scheme callback ends it, state/iss/ID token are checked")
    func success() async throws {
        try await device.withAppleServer { server in
            device.webAuthentication = .navigates { request in try await server.browse(request.url) }
            let client = try await server.appleClient(ephemeral: true)
            let screen = await ScreenStandIn()
            let token = try await client.webviewLogin(
                WebviewLoginRequest(
                    state: "my-state", nonce: "my-nonce", scope: ["openid", "email"],
                    presentationContextProvider: screen))
            #expect(token.user?.email == "demo@example.com")
            #expect(try await client.isSignedIn())
            #expect(await screen.anchorRequests == 1)
            guard case .webAuthenticationStarted(let shown)? = device.log.events.first else { Issue.record("no session"); return }
            #expect(shown.callback == .customScheme("io.latchkey.demo"))
            #expect(shown.prefersEphemeralWebBrowserSession)
            let query = URLComponents(url: shown.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            // The server offers PAR (RFC 9126): the request was pushed, the page's URL carries only its reference.
            #expect(Set(query.map(\.name)) == ["client_id", "request_uri"], "\(shown.url)")
        }
    }

    @Test("the user cancels: .canceled (AuthCanceled); the client is usable afterwards")
    func userCancels() async throws {
        try await device.withAppleServer { server in
            device.webAuthentication = .userCancels
            let client = try await server.appleClient()
            let screen = await ScreenStandIn()
            await #expect { try await client.webviewLogin(WebviewLoginRequest(presentationContextProvider: screen)) } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .canceled && e.category == .authCanceled
            }
            #expect(!client.isLoading())
            device.webAuthentication = .navigates { request in try await server.browse(request.url) }
            #expect(try await client.webviewLogin(WebviewLoginRequest(presentationContextProvider: screen)).user?.email == "demo@example.com")
        }
    }

    @Test("a callback with another state is refused and stores nothing")
    func wrongState() async throws {
        try await device.withAppleServer { server in
            device.webAuthentication = .navigates { request in
                let callback = try await server.browse(request.url)
                var components = try #require(URLComponents(url: callback, resolvingAgainstBaseURL: false))
                components.queryItems = components.queryItems?.map { $0.name == "state" ? URLQueryItem(name: "state", value: "forged") : $0 }
                return try #require(components.url)
            }
            let client = try await server.appleClient()
            let screen = await ScreenStandIn()
            await #expect { try await client.webviewLogin(WebviewLoginRequest(presentationContextProvider: screen)) } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .invalidGrant && e.message.contains("state")
            }
            #expect(try await client.isSignedIn() == false)
        }
    }

    @Test("an https callback (associated domain): the session waits for Callback.https(host:path:) and the sign-in completes")
    func httpsCallback() async throws {
        try await device.withAppleServer { server in
            let seen = LockedBox<WebAuthenticationRequest?>(nil)
            device.webAuthentication = .navigates { request in
                seen.set(request)
                return try await server.browse(request.url)
            }
            let client = try await server.appleClient(afterSignInUrl: "https://app.example/auth/callback")
            let screen = await ScreenStandIn()
            let token = try await client.webviewLogin(WebviewLoginRequest(presentationContextProvider: screen))
            #expect(token.user?.email == "demo@example.com")
            #expect(seen.value?.callback == .https(host: "app.example", path: "/auth/callback"))
        }
    }

    @Test("a second sign-in while a page is showing is refused at once; the first one goes on")
    func secondConcurrentSignIn() async throws {
        try await device.withAppleServer { server in
            let release = AsyncStream<Void>.makeStream()
            device.webAuthentication = .navigates { request in
                for await _ in release.stream { break }
                return try await server.browse(request.url)
            }
            let client = try await server.appleClient()
            let screen = await ScreenStandIn()
            let first = Task { try await client.webviewLogin(WebviewLoginRequest(presentationContextProvider: screen)) }
            #expect(await device.log.waitFor { if case .webAuthenticationStarted = $0 { true } else { false } })
            await #expect { try await client.webviewLogin(WebviewLoginRequest(presentationContextProvider: screen)) } throws: {
                ($0 as? LatchkeyError)?.code == .invalidInput
            }
            release.continuation.yield()
            #expect(try await first.value.user?.email == "demo@example.com")
        }
    }

    @Test("start() returning false is a technical error, not a hang; no presentation context is a configuration error")
    func cannotStart() async throws {
        try await device.withAppleServer { server in
            device.webAuthentication = .cannotStart
            let client = try await server.appleClient()
            let screen = await ScreenStandIn()
            await #expect { try await client.webviewLogin(WebviewLoginRequest(presentationContextProvider: screen)) } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .unknownError && e.category == .technicalError && e.message.contains("did not start")
            }
            await #expect { try await client.webviewLogin(WebviewLoginRequest()) } throws: { ($0 as? LatchkeyError)?.code == .invalidConfiguration }
            #expect(!client.isLoading())
        }
    }

    @Test("cancelling the calling task closes the page and ends the call")
    func taskCancellation() async throws {
        try await device.withAppleServer { server in
            device.webAuthentication = .staysOpen
            let client = try await server.appleClient()
            let screen = await ScreenStandIn()
            let call = Task { try await client.webviewLogin(WebviewLoginRequest(presentationContextProvider: screen)) }
            #expect(await device.log.waitFor { if case .webAuthenticationStarted = $0 { true } else { false } })
            call.cancel()
            await #expect { try await call.value } throws: {
                guard let e = $0 as? LatchkeyError else { return false }
                return e.code == .unknownError && e.underlying is CancellationError
            }
            #expect(await device.log.waitFor(.webAuthenticationCanceledByApp))
        }
    }

    @Test("seed 003 pair in one call: signInWithBrowser builds the URL, shows it and handles the callback")
    func signInWithBrowser() async throws {
        try await device.withAppleServer { server in
            device.webAuthentication = .navigates { request in try await server.browse(request.url) }
            let client = try await server.appleClient()
            let screen = await ScreenStandIn()
            let user = try await client.signInWithBrowser(
                options: SignInOptions(loginHint: "demo@example.com"), sessionId: "work",
                presentationContextProvider: screen)
            #expect(user.email == "demo@example.com")
            #expect(try await client.isSignedIn(sessionId: "work"))
            #expect(try await client.isSignedIn() == false)
        }
    }

    @Test("the Apple client keeps sessions in the Keychain: getAccessToken, a cold start, a locked device (kept, retryable), refresh while locked")
    func keychainByDefault() async throws {
        try await device.withAppleServer { server in
            device.webAuthentication = .navigates { request in try await server.browse(request.url) }
            let client = try await server.appleClient(storage: nil)
            let screen = await ScreenStandIn()
            _ = try await client.webviewLogin(WebviewLoginRequest(presentationContextProvider: screen))
            #expect(device.keychain.items.count == 1)
            #expect(device.keychain.items.first?.service == KeychainStorageAdapter.service(for: server.appleConfig()))
            let token = try await client.getAccessToken()
            #expect(try await server.userinfo(token).status == 200)

            // Cold start before the first unlock (a prewarmed app): a retryable error, and the session is still there.
            device.keychain.lockState = .beforeFirstUnlock
            let prewarmed = try await server.appleClient(storage: nil)
            await #expect { try await prewarmed.isSignedIn() } throws: { ($0 as? LatchkeyError)?.code == .storageUnavailable }
            #expect(device.keychain.items.count == 1)
            device.keychain.lockState = .unlocked
            #expect(try await prewarmed.isSignedIn())
            #expect(try await prewarmed.getAccessToken() == token)
        }
    }
}

/// A value shared with a `@Sendable` closure.
final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func set(_ value: Value) { lock.withLock { stored = value } }
}
