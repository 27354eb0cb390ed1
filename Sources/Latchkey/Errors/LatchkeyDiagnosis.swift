import Foundation

/// What a developer must fix when a `LatchkeyError` comes from the app's set-up rather than from the person or the
/// network's mood: the redirect URI or client id the server does not know, a redirect URI the system sheet cannot
/// catch, a server the app cannot reach (or may not reach: App Transport Security), an app not associated with the
/// passkey domain, a call made before `initialize(config:storage:)`.
///
/// The person never reads this (they cannot fix it); `LatchkeyState` logs it once and keeps it in `diagnosis`, and
/// an app without the SwiftUI layer reads `LatchkeyError.diagnosis`. It holds the error's technical message, never a
/// token, code or password (the SDK's messages carry none).
public struct LatchkeyDiagnosis: Sendable, Hashable, CustomStringConvertible {
    /// The kinds of set-up mistake the SDK recognizes.
    public enum Kind: String, Sendable, CaseIterable {
        /// A call made before `initialize(config:storage:)` finished (or after it failed).
        case notInitialized
        /// The server does not accept the redirect URI (`afterSignInUrl`) for this client.
        case redirectUriNotRegistered
        /// `afterSignInUrl` is not a URL the system's sign-in sheet can bring back to the app.
        case redirectUriScheme
        /// The server does not know the client id (`clientId`, or the flow's `applicationId`).
        case unknownClient
        /// The server could not be reached at `baseUrl`.
        case serverUnreachable
        /// App Transport Security refused plain http to the server.
        case appTransportSecurity
        /// The app is not associated with the passkey domain (the relying party id).
        case passkeyDomainNotAssociated
        /// Another mistake in `LatchkeyConfig` or the server's client registration.
        case invalidConfiguration
    }

    /// The kind of mistake.
    public var kind: Kind
    /// What happened, in English: the error's technical message.
    public var cause: String
    /// What to change.
    public var fix: String

    /// A diagnosis.
    public init(kind: Kind, cause: String, fix: String) {
        self.kind = kind; self.cause = cause; self.fix = fix
    }

    /// One line for a log: "Latchkey set-up: <kind>: <cause>. Fix: <fix>".
    public var description: String { "Latchkey set-up: \(kind.rawValue): \(cause). Fix: \(fix)" }

    /// The diagnosis of `error`, or nil when it is not a set-up mistake (a wrong password, a cancelled sheet, an
    /// expired session, the server's own failure).
    /// - Parameter config: the configuration in use, to name `baseUrl`, `clientId` and `afterSignInUrl` in the fix.
    public init?(_ error: LatchkeyError, config: LatchkeyConfig? = nil) {
        guard let kind = Self.kind(of: error) else { return nil }
        self.init(kind: kind, cause: error.message, fix: Self.fix(for: kind, config: config))
    }

    /// Which mistake `error` shows, if any: by its code, then by the server's code, the underlying system error, or
    /// (for the SDK's own messages and pages of other providers) the words of its message.
    static func kind(of error: LatchkeyError) -> Kind? {
        let message = error.message.lowercased()
        switch error.code {
        case .sdkNotInitialized:
            return .notInitialized
        case .invalidRedirectUri:
            return .redirectUriScheme
        case .networkError, .requestTimeout:
            let refusedByATS =
                (error.underlying as? URLError)?.code == .appTransportSecurityRequiresSecureConnection
                || message.contains("app transport security")
            return refusedByATS ? .appTransportSecurity : .serverUnreachable
        case .passkeyDomainNotAssociated,
            .passkeyFailed where message.contains("associated domains"):
            return .passkeyDomainNotAssociated
        case .invalidConfiguration:
            if ["invalid_client", "unauthorized_client", "FES-1003"].contains(error.serverCode ?? "") { return .unknownClient }
            if message.contains("afterSignInUrl".lowercased()) && message.contains("not set") { return .redirectUriScheme }
            if message.contains("redirect_uri") || message.contains("redirect uri") { return .redirectUriNotRegistered }
            return .invalidConfiguration
        default:
            return nil
        }
    }

    /// What to change for `kind`, naming the configured values where there are some.
    static func fix(for kind: Kind, config: LatchkeyConfig?) -> String {
        let server = config.map { "'\($0.baseUrl)'" } ?? "baseUrl"
        switch kind {
        case .notInitialized:
            return "call initialize(config:storage:) and wait for it before this call, or put .latchkeyProvider(config:) above "
                + "the view (its state initializes the client when it appears); if initialize failed, fix that error first"
        case .redirectUriScheme:
            return "set afterSignInUrl to a URL with a custom scheme of the app's own, such as com.example.myapp:/callback, "
                + "and register it exactly so on the server"
        case .redirectUriNotRegistered:
            let redirect = config?.afterSignInUrl.map { "'\($0)'" } ?? "afterSignInUrl"
            return "register \(redirect) among the client's redirect URIs on the server exactly as written (':/' and "
                + "'://' differ, and so does a trailing slash), or set afterSignInUrl to one that is registered"
        case .unknownClient:
            let clientId = config.map { "'\($0.clientId)'" } ?? "the configured one"
            return "register the client \(clientId) on the server (its configuration file's clients, or dynamic "
                + "registration), or set clientId to a client the server has"
        case .serverUnreachable:
            return "check that the server runs at \(server); in the simulator localhost is the Mac, on a device it is the "
                + "device itself: use the Mac's network name over https (README, \"Reaching a development server\")"
        case .appTransportSecurity:
            return "serve \(server) over https, or for a development server on this Mac add an App Transport Security "
                + "exception for localhost to Info.plist (NSAppTransportSecurity > NSExceptionDomains)"
        case .passkeyDomainNotAssociated:
            return "add webcredentials:<the server's relying party id> to the app's Associated Domains entitlement and serve "
                + "/.well-known/apple-app-site-association there listing <Team ID>.<bundle id> under webcredentials"
        case .invalidConfiguration:
            return "check LatchkeyConfig (baseUrl over https off this Mac, clientId, afterSignInUrl, scopes) against the "
                + "server's registration of the client"
        }
    }
}

extension LatchkeyError {
    /// What the developer must fix when this error comes from the app's set-up; nil otherwise.
    public var diagnosis: LatchkeyDiagnosis? { LatchkeyDiagnosis(self) }
}
