import Foundation

/// One of the signed-in user's sign-in sessions, as the server lists them (``LatchkeyClient/sessions(sessionId:)``):
/// a browser or device where the person signed in, and the applications signed in through it.
///
/// Nothing in it is a secret: the ``id`` names the session to ``LatchkeyClient/endSession(id:sessionId:)`` and is the
/// `sid` claim of the tokens issued in it.
public struct SignInSession: Sendable, Equatable, Identifiable {
    /// The server's id of the session (the `sid` claim).
    public var id: String
    /// Whether this is the session the call was made from (this device).
    public var isCurrent: Bool
    /// When the session began.
    public var createdAt: Date?
    /// When the person last authenticated in it (a later step-up or re-authentication moves it).
    public var authenticatedAt: Date?
    /// When the session expires (an application signed in with `offline_access` may outlive it).
    public var expiresAt: Date?
    /// How the person authenticated (RFC 8176 `amr` values: `pwd`, `otp`, `mfa`, `hwk`, `fed` …).
    public var methods: [String]
    /// The identity provider of a federated sign-in (`"corp"`), nil otherwise.
    public var identityProvider: String?
    /// The applications signed in through the session, oldest first.
    public var applications: [SignedInApplication]

    /// A session entry.
    public init(
        id: String, isCurrent: Bool = false, createdAt: Date? = nil, authenticatedAt: Date? = nil, expiresAt: Date? = nil,
        methods: [String] = [], identityProvider: String? = nil, applications: [SignedInApplication] = []
    ) {
        self.id = id; self.isCurrent = isCurrent; self.createdAt = createdAt; self.authenticatedAt = authenticatedAt
        self.expiresAt = expiresAt; self.methods = methods; self.identityProvider = identityProvider; self.applications = applications
    }

    /// An entry of `GET /users/me/sessions`; nil without an `id`.
    init?(json: JSONValue) {
        guard let o = json.objectMembers, let id = o["id"]?.stringValue, !id.isEmpty else { return nil }
        var applications: [SignedInApplication] = []
        if case .array(let entries)? = o["applications"] { applications = entries.compactMap(SignedInApplication.init(json:)) }
        self.init(
            id: id, isCurrent: o["current"]?.boolValue ?? false, createdAt: Self.date(o["created_at"]),
            authenticatedAt: Self.date(o["auth_time"]), expiresAt: Self.date(o["expires_at"]), methods: o["amr"]?.stringArray ?? [],
            identityProvider: o["idp"]?.stringValue, applications: applications)
    }

    /// An RFC 3339 time of the server's answer.
    static func date(_ value: JSONValue?) -> Date? {
        guard let text = value?.stringValue else { return nil }
        return ISO8601DateFormatter().date(from: text)
    }
}

/// An application signed in to the user's account (a grant: one refresh-token family and the access tokens issued
/// from it), an entry of ``SignInSession/applications``.
public struct SignedInApplication: Sendable, Equatable, Identifiable {
    /// The server's id of the grant.
    public var id: String
    /// The application's client id.
    public var clientId: String
    /// The application's name, as the server knows it (its client id when it has none).
    public var clientName: String
    /// When the application signed in.
    public var createdAt: Date?
    /// When it last refreshed its tokens; nil when it never did.
    public var lastRefreshedAt: Date?
    /// When its last token expires, unless refreshed.
    public var expiresAt: Date?
    /// Whether this is the grant the call was made with (this app, on this device).
    public var isCurrent: Bool

    /// An application entry.
    public init(
        id: String, clientId: String, clientName: String? = nil, createdAt: Date? = nil, lastRefreshedAt: Date? = nil,
        expiresAt: Date? = nil, isCurrent: Bool = false
    ) {
        self.id = id; self.clientId = clientId; self.clientName = clientName ?? clientId; self.createdAt = createdAt
        self.lastRefreshedAt = lastRefreshedAt; self.expiresAt = expiresAt; self.isCurrent = isCurrent
    }

    /// An entry of a session's `applications`; nil without a `grant_id` or `client_id`.
    init?(json: JSONValue) {
        guard let o = json.objectMembers, let id = o["grant_id"]?.stringValue, let clientId = o["client_id"]?.stringValue else { return nil }
        self.init(
            id: id, clientId: clientId, clientName: o["client_name"]?.stringValue, createdAt: SignInSession.date(o["created_at"]),
            lastRefreshedAt: SignInSession.date(o["last_refreshed_at"]), expiresAt: SignInSession.date(o["expires_at"]),
            isCurrent: o["current"]?.boolValue ?? false)
    }
}
