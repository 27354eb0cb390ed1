import Foundation

/// The tokens of one session, stored as one item. `expiresAt` is absolute, so a restored set knows its age.
public struct TokenSet: Sendable, Codable, Equatable {
    public var accessToken: String
    public var refreshToken: String?
    public var idToken: String?
    public var tokenType: String
    public var expiresAt: Date
    public var scope: String?
    /// The nonce of the original sign-in; a refreshed ID token that carries a nonce must repeat it.
    public var nonce: String?
    /// The `persistentReference` of the DPoP key the tokens are bound to (`tokenType` `DPoP`); forgotten with them.
    public var dpopKey: String? = nil
    /// Where the sign-in's page was shown: a browser (the provider's session is then that browser's cookie), or none
    /// (app-native flows, passkeys, the device grant, token exchange). nil for a session stored before the SDK
    /// recorded it: sign-out then cannot tell, and reports what it cannot confirm as unconfirmed.
    public var browser: SignInBrowser? = nil

    public init(
        accessToken: String, refreshToken: String?, idToken: String?, tokenType: String = "Bearer", expiresAt: Date,
        scope: String?, nonce: String?, dpopKey: String? = nil
    ) {
        self.accessToken = accessToken; self.refreshToken = refreshToken; self.idToken = idToken; self.tokenType = tokenType
        self.expiresAt = expiresAt; self.scope = scope; self.nonce = nonce; self.dpopKey = dpopKey
    }

    public func isExpired(now: Date = Date(), skew: TimeInterval = 0) -> Bool { expiresAt.timeIntervalSince(now) <= skew }
}

/// Which browser a redirect sign-in used, for ending the provider's session there (`SignOutOptions.ProviderSession`).
public enum SignInBrowser: String, Sendable, Codable, Equatable {
    /// The client's user agent, one that keeps the provider's cookie (the system browser of the loopback user agent,
    /// a shared `ASWebAuthenticationSession`): sign-out can send it to the end-session page.
    case userAgent
    /// A browser the app drove itself (`buildSignInURL` and `handleRedirectCallback`), or a user agent that keeps no
    /// cookies: the SDK cannot reach its session, and a request from the app cannot confirm it ended.
    case other
    /// No browser: the sign-in happened in the app (a flow, a passkey, the device grant), so no browser holds a session
    /// of it; a provider that ends the session the ID token names is then confirmed by its redirect.
    case withoutBrowser
}

/// The token endpoint's answer (RFC 6749 §5.1, RFC 8693 §2.2.1).
public struct TokenResponse: Sendable, Codable, Equatable {
    public var accessToken: String
    public var tokenType: String?
    public var expiresIn: Int?
    public var refreshToken: String?
    public var idToken: String?
    public var scope: String?
    public var issuedTokenType: String?
    /// The DPoP key the request proved (not part of the answer): kept with the session's tokens.
    var dpopKey: String? = nil

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token", tokenType = "token_type", expiresIn = "expires_in", refreshToken = "refresh_token"
        case idToken = "id_token", scope, issuedTokenType = "issued_token_type"
    }
}

// Printing, interpolating or dumping a token set or a token answer never shows a token or the DPoP private key (for a
// software key `dpopKey` is the key itself): what an app logs by accident stays harmless.
extension TokenSet: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "TokenSet(tokenType: \(tokenType), expiresAt: \(expiresAt), scope: \(scope ?? "-"), refreshToken: \(refreshToken == nil ? "none" : "redacted"), "
            + "idToken: \(idToken == nil ? "none" : "redacted"), dpopKey: \(dpopKey == nil ? "none" : "redacted"))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

extension TokenResponse: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "TokenResponse(tokenType: \(tokenType ?? "-"), expiresIn: \(expiresIn.map(String.init) ?? "-"), scope: \(scope ?? "-"), "
            + "refreshToken: \(refreshToken == nil ? "none" : "redacted"), idToken: \(idToken == nil ? "none" : "redacted"))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
