import Foundation

/// Whose application this is, and so what it may do without asking (as Keycloak's "consent required", Hydra's
/// `skip_consent` and Auth0's first-party flag).
///
/// - **First-party**: an application of the configuration file, run by the operator. Signing in is consent enough,
///   and its tokens manage the account (`/users/me`, SCIM `/Me`, sessions, passkeys, linked identities).
/// - **Third-party**: an application registered through the API or the console, or one the file marks
///   `third_party: true`. Each sign-in needs the person's consent to the scopes asked for (kept per user, application
///   and scopes: `ConsentStore`), `prompt=none` answers `consent_required` until it exists, and its tokens reach
///   account management only with `latchkey.account`, a scope registration never grants.
enum ApplicationTrust: Sendable, Equatable {
    case firstParty
    case thirdParty

    /// The scope that lets a token manage the account it was issued for (profile, email, credentials, sessions,
    /// linked identities). First-party applications have it implicitly; registration never grants it.
    static let accountScope = "latchkey.account"

    init(_ record: ClientRecord) {
        self = record.origin == .configuration && !record.configuration.thirdParty ? .firstParty : .thirdParty
    }

    var isThirdParty: Bool { self == .thirdParty }
}
