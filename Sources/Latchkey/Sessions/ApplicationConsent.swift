import Foundation

/// A consent the signed-in person gave a third-party application (one registered with the server rather than run by
/// its operator), as the server lists them (``LatchkeyClient/consents(sessionId:)``): the application may be given
/// these scopes without asking again.
public struct ApplicationConsent: Sendable, Equatable, Identifiable {
    /// The application's client id (also the consent's id: one consent per application).
    public var clientId: String
    /// The application's name, as the server knows it (its client id when it has none).
    public var clientName: String
    /// The scopes consented to, sorted.
    public var scopes: [String]
    /// When the person first consented.
    public var grantedAt: Date?
    /// When the consent last grew.
    public var updatedAt: Date?

    public var id: String { clientId }

    /// A consent entry.
    public init(clientId: String, clientName: String? = nil, scopes: [String] = [], grantedAt: Date? = nil, updatedAt: Date? = nil) {
        self.clientId = clientId; self.clientName = clientName ?? clientId; self.scopes = scopes; self.grantedAt = grantedAt
        self.updatedAt = updatedAt
    }

    /// An entry of `GET /users/me/consents`; nil without a `client_id`.
    init?(json: JSONValue) {
        guard let o = json.objectMembers, let clientId = o["client_id"]?.stringValue, !clientId.isEmpty else { return nil }
        self.init(
            clientId: clientId, clientName: o["client_name"]?.stringValue, scopes: o["scopes"]?.stringArray ?? [],
            grantedAt: SignInSession.date(o["granted_at"]), updatedAt: SignInSession.date(o["updated_at"]))
    }
}
