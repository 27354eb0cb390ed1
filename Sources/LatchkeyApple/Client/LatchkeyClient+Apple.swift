import Foundation
import Latchkey
import Logging

/// The Apple client: the system sheets and the Keychain behind the SDK's seams.
extension LatchkeyClient {
    /// A client wired to the Apple platform: `webviewLogin` in an `ASWebAuthenticationSession`, native sign-in
    /// through the system credential sheet, passkeys on the platform authenticator, and the Keychain as the storage
    /// `initialize(config:storage:)` uses when it is given none; with `LatchkeyConfig.useDPoP`, session keys in the
    /// Secure Enclave where the device has one.
    /// - Parameters:
    ///   - http: the network seam (URLSession by default).
    ///   - prefersEphemeralWebBrowserSession: private browser sessions for `webviewLogin` (no shared cookies).
    ///   - keychainAccessibility: when stored sessions can be read.
    ///   - keychainAccessGroup: a keychain access group shared with the app's extensions.
    ///   - keychainBiometrics: Face ID, Touch ID or the passcode in front of the stored session, and how often
    ///     (`BiometricProtection`, `BiometricPolicy`); nil: none.
    ///   - logger: where the client reports what it worked around and its exchanges (debug); by default the unified
    ///     log on Apple platforms (`Logger.latchkey`).
    ///   - clock: the time the SDK's rules decide by; an app's tests pass a `ManualClock`'s.
    public convenience init(
        http: any HTTPClient = URLSessionHTTPClient(), prefersEphemeralWebBrowserSession: Bool = false,
        keychainAccessibility: KeychainStorageAdapter.Accessibility = .afterFirstUnlockThisDeviceOnly,
        keychainAccessGroup: String? = nil, keychainBiometrics: BiometricProtection? = nil, logger: Logger = .latchkey,
        clock: LatchkeyClock = .system
    ) {
        self.init(
            http: http, userAgent: WebAuthenticationSessionUserAgent(prefersEphemeralWebBrowserSession: prefersEphemeralWebBrowserSession),
            logger: logger,
            defaultStorage: { config in
                // On the client's clock: the refresh lease's expiry and how long a confirmation lasts.
                KeychainStorageAdapter(
                    service: KeychainStorageAdapter.service(for: config), accessibility: keychainAccessibility,
                    accessGroup: keychainAccessGroup, biometrics: keychainBiometrics, now: clock.now)
            }, clock: clock)
        credentialProvider = AuthorizationControllerCredentialProvider()
        passkeyAuthenticator = PlatformPasskeyAuthenticator()
        defaultDPoPKeys = SecureEnclaveDPoPKeyProvider()
    }

    #if canImport(AuthenticationServices)
    /// The ThunderID-style `ThunderIDClient()` / `LatchkeyClient()` in an app that imports LatchkeyApple: the Apple client
    /// above with its defaults (Swift prefers this initializer, which needs no default arguments, over the core one).
    public convenience init() {
        self.init(http: URLSessionHTTPClient(), prefersEphemeralWebBrowserSession: false)
    }
    #endif
}
