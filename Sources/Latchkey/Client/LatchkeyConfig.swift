import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which identity-API dialect the server speaks besides standard OAuth 2.0 / OpenID Connect.
public enum Dialect: String, Sendable, Codable {
    case standard, thunderID, reachFive
}

/// ID-token validation settings.
public struct TokenValidation: Sendable, Equatable {
    /// Validate ID tokens (signature and claims). Only turn off for providers that sign with keys you cannot fetch.
    public var validate: Bool
    /// Allowed clock skew, seconds.
    public var clockTolerance: TimeInterval
    public init(validate: Bool = true, clockTolerance: TimeInterval = 60) {
        self.validate = validate; self.clockTolerance = clockTolerance
    }
}

/// SDK configuration (ThunderID's `ThunderIDConfig`).
public struct LatchkeyConfig: Sendable {
    /// The issuer / server base URL. HTTPS, or plain http on a loopback host for development.
    public var baseUrl: String
    /// The application's client id.
    public var clientId: String
    /// The scopes asked for at sign-in.
    public var scopes: [String]
    /// Redirect URI registered for the app (`io.example.app://callback`, or a loopback URL for the CLI).
    public var afterSignInUrl: String?
    /// Where the provider sends the browser after a sign-out (`post_logout_redirect_uri`).
    public var afterSignOutUrl: String?
    /// ThunderID application id (defaults to the client id).
    public var applicationId: String?
    /// How ID tokens are checked.
    public var tokenValidation: TokenValidation
    /// The identity-API dialect the server speaks besides OAuth 2.0 and OpenID Connect.
    public var dialect: Dialect
    /// Supplies a platform attestation (Apple App Attest object, base64) sent as `Attestation-Token` when an
    /// app-native sign-in starts; servers require it for `mobile` applications outside development mode.
    public var attestationTokenProvider: (@Sendable () async throws -> String)?
    /// The WebAuthn origin (`scheme://host[:port]`) of passkey ceremonies; nil uses the issuer's origin.
    /// See `LatchkeyClient.originWebAuthn(overriddenBy:)`.
    public var originWebAuthn: String? = nil
    /// The user's languages, most preferred first (BCP 47: `fr-CA`, `ja`, `zh-Hant-HK`), for the messages the server
    /// shows or returns. Sent as `Accept-Language` on every request, as `ui_locales` on the authorization URL and as
    /// the flow API's `locale`. `nil` uses the device's settings (`Locale.preferredLanguages`); an empty list sends
    /// nothing, leaving the choice to the server.
    public var preferredLanguages: [String]?
    /// Bind the session's tokens to a key of this device (DPoP, RFC 9449): every token request carries a proof made
    /// with the session's key, so a stolen access or refresh token is useless elsewhere; resource requests send
    /// `Authorization: DPoP` with a proof (`LatchkeyClient.authorizationHeaders(method:url:sessionId:)` for your own
    /// APIs). Server nonces (`use_dpop_nonce`) are answered by one retry. Off by default; providers that ignore DPoP
    /// keep issuing Bearer tokens, which are then used as such.
    public var useDPoP = false
    /// Where sessions' DPoP keys come from; nil: software P-256 keys stored with the tokens (LatchkeyApple's client
    /// uses the Secure Enclave where there is one).
    public var dpopKeyProvider: (any DPoPKeyProvider)? = nil

    /// A configuration (ThunderID's `ThunderIDConfig(baseUrl:clientId:scopes:afterSignInUrl:afterSignOutUrl:)`);
    /// `init(issuerURL:clientId:scopes:redirectURI:postLogoutRedirectURI:…)` is the same in `URL`s.
    public init(
        baseUrl: String, clientId: String, scopes: [String] = ["openid", "profile", "email"], afterSignInUrl: String? = nil,
        afterSignOutUrl: String? = nil, applicationId: String? = nil, tokenValidation: TokenValidation = TokenValidation(),
        dialect: Dialect = .standard, attestationTokenProvider: (@Sendable () async throws -> String)? = nil,
        preferredLanguages: [String]? = nil
    ) {
        self.baseUrl = baseUrl; self.clientId = clientId; self.scopes = scopes; self.afterSignInUrl = afterSignInUrl
        self.afterSignOutUrl = afterSignOutUrl; self.applicationId = applicationId; self.tokenValidation = tokenValidation
        self.dialect = dialect; self.attestationTokenProvider = attestationTokenProvider; self.preferredLanguages = preferredLanguages
    }

    /// A configuration in `URL`s, the core's spelling of the ThunderID-style initializer: the same configuration,
    /// checked the same way by `initialize(config:storage:)`.
    /// - Parameters:
    ///   - issuerURL: the issuer (the server's base URL): HTTPS, or plain http on a loopback host for development.
    ///   - clientId: the application's client id.
    ///   - scopes: the scopes to ask for.
    ///   - redirectURI: the redirect URI registered for the app (`io.example.app:/callback`, or a loopback URL).
    ///   - postLogoutRedirectURI: where the provider sends the browser after a sign-out.
    ///   - applicationId: the ThunderID application id of app-native flows (defaults to the client id).
    ///   - tokenValidation: how ID tokens are checked.
    ///   - dialect: the identity-API dialect the server speaks besides OAuth 2.0 and OpenID Connect.
    ///   - attestationTokenProvider: a platform attestation sent when an app-native sign-in starts.
    ///   - preferredLanguages: the user's languages, most preferred first; nil follows the device.
    public init(
        issuerURL: URL, clientId: String, scopes: [String] = ["openid", "profile", "email"], redirectURI: URL? = nil,
        postLogoutRedirectURI: URL? = nil, applicationId: String? = nil, tokenValidation: TokenValidation = TokenValidation(),
        dialect: Dialect = .standard, attestationTokenProvider: (@Sendable () async throws -> String)? = nil,
        preferredLanguages: [String]? = nil
    ) {
        self.init(
            baseUrl: issuerURL.absoluteString, clientId: clientId, scopes: scopes, afterSignInUrl: redirectURI?.absoluteString,
            afterSignOutUrl: postLogoutRedirectURI?.absoluteString, applicationId: applicationId, tokenValidation: tokenValidation,
            dialect: dialect, attestationTokenProvider: attestationTokenProvider, preferredLanguages: preferredLanguages)
    }

    /// `baseUrl` as a `URL`; nil when it is not one (which `initialize(config:storage:)` refuses). Setting it sets
    /// `baseUrl`.
    public var issuerURL: URL? {
        get { URL(string: baseUrl) }
        set { baseUrl = newValue?.absoluteString ?? "" }
    }

    /// `afterSignInUrl` as a `URL`: the redirect URI of sign-ins. Setting it sets `afterSignInUrl`.
    public var redirectURI: URL? {
        get { afterSignInUrl.flatMap(URL.init(string:)) }
        set { afterSignInUrl = newValue?.absoluteString }
    }

    /// `afterSignOutUrl` as a `URL`: where the provider sends the browser after a sign-out. Setting it sets
    /// `afterSignOutUrl`.
    public var postLogoutRedirectURI: URL? {
        get { afterSignOutUrl.flatMap(URL.init(string:)) }
        set { afterSignOutUrl = newValue?.absoluteString }
    }

    /// The languages to send: `preferredLanguages`, or the device's, as clean BCP 47 tags without duplicates.
    var languageTags: [String] { LanguagePreferences.tags(preferredLanguages ?? Locale.preferredLanguages) }

    /// The issuer string as tokens carry it (no trailing slash).
    /// The issuer: `baseUrl` without a trailing slash.
    public var issuer: String { baseUrl.hasSuffix("/") ? String(baseUrl.dropLast()) : baseUrl }

    /// `localhost`, or a literal address in 127.0.0.0/8 or `::1`. The host is parsed as an address, so a name such
    /// as `127.example.com` is not mistaken for loopback.
    static func isLoopback(host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, bare, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { bytes in bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1 }
        }
        return false
    }

    func validate() throws {
        guard !baseUrl.isEmpty, let url = URL(string: baseUrl), let host = url.host, !host.isEmpty else {
            throw LatchkeyError(.invalidConfiguration, "baseUrl must be an absolute URL")
        }
        let loopback = Self.isLoopback(host: host)
        guard url.scheme == "https" || (url.scheme == "http" && loopback) else {
            throw LatchkeyError(.invalidConfiguration, "baseUrl must use HTTPS (plain http is allowed only for loopback hosts)")
        }
        guard !clientId.isEmpty else { throw LatchkeyError(.invalidConfiguration, "clientId is empty") }
        // A redirect URI without a scheme ("callback", "/callback") can never come back to the app: said at once,
        // not after the person has signed in on a page that then goes nowhere.
        for (name, value) in [("afterSignInUrl", afterSignInUrl), ("afterSignOutUrl", afterSignOutUrl)] {
            if let value, URLComponents(string: value)?.scheme?.isEmpty != false {
                throw LatchkeyError(
                    .invalidRedirectUri,
                    "\(name) \"\(value)\" has no URL scheme: use a custom scheme of the app's own (com.example.myapp:/callback)")
            }
        }
    }
}

/// ThunderID's name for the configuration.
public typealias ThunderIDConfig = LatchkeyConfig

/// Optional hints for one redirect sign-in (``AuthorizationCodeFlow/start(options:)``,
/// ``AuthorizationCodeFlow/signIn(options:presentationContextProvider:)``, `buildSignInURL(options:)`).
public struct SignInOptions: Sendable {
    /// OpenID Connect `prompt` (`"login"`, `"none"`, `"consent"` …); nil sends none.
    public var prompt: String?
    /// `login_hint`: the username the provider's page proposes; nil sends none.
    public var loginHint: String?
    /// Federated identity provider hint.
    public var fidp: String?
    /// The identity provider to sign in with, sent as `provider` (ReachFive's spelling, as
    /// `WebviewLoginRequest.provider`): the server skips its login page and sends the browser straight to that
    /// provider (`"google"`, `"corp"`; a ReachFive `"name:variant"` is sent as given). Nil or empty sends nothing.
    public var provider: String?
    /// `max_age` in seconds: the longest ago the person may have signed in at the provider; the ID token's
    /// `auth_time` is checked against it. Nil sends none.
    public var maxAge: Int?
    /// Extra authorization parameters; they never override the ones the SDK sets.
    public var extra: [String: String]

    /// Hints for one sign-in.
    /// - Parameters:
    ///   - prompt: OpenID Connect `prompt` (`"login"`, `"none"`, `"consent"` …).
    ///   - loginHint: `login_hint`: the username to propose.
    ///   - fidp: a federated identity provider hint, sent as `fidp`.
    ///   - provider: the identity provider to go straight to, sent as `provider`.
    ///   - maxAge: `max_age` in seconds; the ID token's `auth_time` is checked against it.
    ///   - extra: other authorization parameters; they never replace the ones the SDK sets.
    public init(
        prompt: String? = nil, loginHint: String? = nil, fidp: String? = nil, provider: String? = nil, maxAge: Int? = nil,
        extra: [String: String] = [:]
    ) {
        self.prompt = prompt; self.loginHint = loginHint; self.fidp = fidp; self.provider = provider; self.maxAge = maxAge
        self.extra = extra
    }
}

/// Options for `signOut(options:sessionId:)` and `signOutReporting(options:sessionId:)`.
public struct SignOutOptions: Sendable {
    /// How the provider's own session is ended.
    public enum ProviderSession: Sendable, Equatable {
        /// In the browser when the session was signed in through one that keeps the provider's cookie (the system
        /// browser of the loopback user agent, a shared `ASWebAuthenticationSession`); by a request from the app
        /// otherwise, or when no browser page can be shown. The default.
        case automatic
        /// In the browser: the client's user agent is sent to `end_session_endpoint` (RP-Initiated Logout 1.0) and
        /// the sign-out waits for the provider's redirect back (its `state` checked). Falls back to a request from the
        /// app when no page can be shown (no presentation context).
        case inBrowser
        /// By a request from the app (`id_token_hint`, POST, then GET if refused). Ends the session at providers that
        /// accept that, Latchkey's own among them; most keep the browser's session, which only the browser can end.
        case request
        /// Left alone: only the tokens are revoked (the person stays signed in to the provider's other apps).
        case keep
    }

    /// ID token to send as `id_token_hint`; defaults to the session's own.
    public var idTokenHint: String?
    /// How the provider's session is ended; `.automatic` by default.
    public var providerSession: ProviderSession
    /// What the sign-out page is presented from (Apple platforms: the window of the `ASWebAuthenticationSession`).
    public var presentationContext: PresentationContextProviderBox?

    /// Options: another ID-token hint, how the provider's session is ended, and what its page is presented from.
    public init(
        idTokenHint: String? = nil, providerSession: ProviderSession = .automatic,
        presentationContextProvider: (any PresentationContextProviding)? = nil
    ) {
        self.idTokenHint = idTokenHint
        self.providerSession = providerSession
        self.presentationContext = presentationContextProvider.map(PresentationContextProviderBox.init)
    }
}
