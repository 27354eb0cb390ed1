import Foundation

/// Who the provider says signed in, after every check: the provider's subject and the claims an account may take.
struct UpstreamIdentity: Codable, Sendable, Equatable {
    var provider: String
    var subject: String
    var email: String?
    /// The provider vouches that the person reads `email` (an ID token's `email_verified`, GitHub's verified primary).
    var emailVerified: Bool
    var name: String?
    var givenName: String?
    var familyName: String?
    var preferredUsername: String?
    /// The provider asserted a multi-factor sign-in (`amr` with `mfa`, or the PAPE multi-factor `acr`) and the
    /// configuration trusts it (`trust_mfa`).
    var assertsMFA: Bool
    /// Sign in with Apple's refresh token from this sign-in, sealed for (provider, subject)
    /// (`Federation.sealRefreshToken`): the link keeps it so that deleting the account can revoke it at Apple. Sealed
    /// here already because the identity waits in the store (`Federation.Result`, flows) until an app collects it.
    var sealedRefreshToken: String? = nil

    /// The methods of this sign-in (RFC 8176): `fed`, `mfa` when the provider asserted it, and the provider's id
    /// (`AuthenticationMethods.providerMarker`), which becomes the tokens' `idp` claim.
    var amr: [String] {
        AuthenticationMethods.normalized(["fed"] + (assertsMFA ? ["mfa"] : []) + [AuthenticationMethods.providerMarker + provider])
    }

    /// The OpenID claims a new account may take from the provider, `email_verified` as the provider said it.
    var claims: [String: String] {
        var claims: [String: String] = [:]
        if let email {
            claims["email"] = email
            claims["email_verified"] = emailVerified ? "true" : "false"
        }
        if let name = name?.nonEmpty { claims["name"] = name }
        if let givenName = givenName?.nonEmpty { claims["given_name"] = givenName }
        if let familyName = familyName?.nonEmpty { claims["family_name"] = familyName }
        if let preferredUsername = preferredUsername?.nonEmpty { claims["preferred_username"] = preferredUsername }
        return claims
    }
}
