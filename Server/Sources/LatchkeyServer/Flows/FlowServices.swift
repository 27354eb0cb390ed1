import Logging

/// What the flow engine's steps use (the executors in `Executors/`): accounts and their credentials, passkey
/// ceremonies, admission limits, the server's own tokens, and the validator of the access tokens a flow may carry.
struct FlowServices: Sendable {
    let store: any UserStore & InvitationStore & PasskeyStore & TokenStore & SessionStore
    let clock: ServerClock
    let accounts: Accounts
    let passkeys: Passkeys
    let admission: Admission
    let ownTokens: OwnTokens
    let kit: TokenKit
    let federation: Federation
    let federatedAccounts: FederatedAccounts
    let audit: AuditTrail

    var configuration: ServerConfiguration { accounts.configuration }
    var userSchema: UserSchema { accounts.userSchema }
    var hasher: PasswordHasher { accounts.hasher }
    var outbox: any Outbox { accounts.outbox }
    var validator: TokenValidator { kit.validator }
}
