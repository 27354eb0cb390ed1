import Foundation

/// One identity provider an application offers (ReachFive's `ProviderConfig`): an entry of
/// ``LatchkeyClient/getProviders()`` and of ``LinkedIdentities/available``.
///
/// Pass ``provider`` (or ``providerWithVariant``) as ``WebviewLoginRequest/provider`` to sign in with it, or to
/// ``LatchkeyClient/linkIdentity(provider:presentationContextProvider:sessionId:)`` to link it to the signed-in
/// account.
public struct ProviderConfig: Sendable, Equatable, Identifiable {
    /// The provider's id on the server (`"corp"`, `"google"`, `"github"`).
    public var provider: String
    /// ReachFive's variant of the provider (`"web"` in `"google:web"`); nil when the server names none (Latchkey's
    /// servers do not).
    public var variant: String?
    /// The name to show ("Corp SSO"), when the server gives one.
    public var name: String?
    /// The kind of provider (`"oidc"`, `"google"`, `"microsoft"`, `"github"`, `"apple"` on a Latchkey server), when the
    /// server gives one.
    public var type: String?
    /// ReachFive's client id of the app at the provider, when the server publishes it (a native SDK of the provider
    /// needs it).
    public var clientId: String?
    /// ReachFive's scopes to ask the provider for, when the server publishes them.
    public var scope: [String]?

    /// ``providerWithVariant``.
    public var id: String { providerWithVariant }

    /// `provider:variant` when there is a variant (ReachFive's spelling), else `provider`: what
    /// ``WebviewLoginRequest/provider`` takes.
    public var providerWithVariant: String { variant.map { "\(provider):\($0)" } ?? provider }

    /// A provider entry.
    public init(
        provider: String, variant: String? = nil, name: String? = nil, type: String? = nil, clientId: String? = nil,
        scope: [String]? = nil
    ) {
        self.provider = provider; self.variant = variant; self.name = name; self.type = type; self.clientId = clientId
        self.scope = scope
    }

    /// An entry of the server's answer; nil when it has no `provider`. `scope` may be a list or a space-separated
    /// string.
    init?(json: JSONValue) {
        guard let o = json.objectMembers, let provider = o["provider"]?.stringValue, !provider.isEmpty else { return nil }
        let scope: [String]? =
            if let text = o["scope"]?.stringValue {
                text.split(separator: " ").map(String.init)
            } else {
                o["scope"]?.stringArray
            }
        self.init(
            provider: provider, variant: o["variant"]?.stringValue, name: o["name"]?.stringValue, type: o["type"]?.stringValue,
            clientId: o["client_id"]?.stringValue, scope: scope)
    }
}

/// An identity provider linked to the signed-in account: the person can sign in with it.
public struct LinkedIdentity: Sendable, Equatable, Identifiable {
    /// The provider's id on the server (`"corp"`).
    public var provider: String
    /// The name to show ("Corp SSO"), when the server gives one.
    public var name: String?
    /// When it was linked, when the server says.
    public var linkedAt: Date?

    /// ``provider``.
    public var id: String { provider }

    /// A linked identity.
    public init(provider: String, name: String? = nil, linkedAt: Date? = nil) {
        self.provider = provider; self.name = name; self.linkedAt = linkedAt
    }

    /// An entry of the server's answer (`{"provider","name","linked_at"}`); nil when it has no `provider`.
    init?(json: JSONValue, fallbackProvider: String? = nil) {
        let o = json.objectMembers ?? [:]
        guard let provider = o["provider"]?.stringValue ?? fallbackProvider, !provider.isEmpty else { return nil }
        self.init(provider: provider, name: o["name"]?.stringValue, linkedAt: o["linked_at"]?.stringValue.flatMap(RFC3339.date))
    }
}

/// The identity providers of the signed-in account (``LatchkeyClient/linkedIdentities(sessionId:)``).
public struct LinkedIdentities: Sendable, Equatable {
    /// The providers linked to the account.
    public var identities: [LinkedIdentity]
    /// The providers the application offers for linking (``ProviderConfig/provider`` and ``ProviderConfig/name``).
    public var available: [ProviderConfig]

    /// The account's identities.
    public init(identities: [LinkedIdentity], available: [ProviderConfig] = []) {
        self.identities = identities; self.available = available
    }
}
