import Foundation

/// What issuing and verifying the server's tokens takes: the issuer in force (completed with the bound port at start,
/// so it is read when used, not when a controller is built), the store, the key ring, the lifetimes and the clock.
/// Controllers hold this instead of the pieces, and make a `TokenIssuer` or `TokenValidator` when they need one.
struct TokenKit: Sendable {
    let issuerInForce: @Sendable () -> String
    let store: any Store
    let keys: KeyRing
    let lifetimes: TokenLifetimes
    let clock: ServerClock
    let subjects: SubjectIdentifiers

    var issuer: String { issuerInForce() }
    var issuing: TokenIssuer { TokenIssuer(issuer: issuer, store: store, keys: keys, lifetimes: lifetimes, clock: clock, subjects: subjects) }
    var validator: TokenValidator { TokenValidator(issuer: issuer, store: store, keys: keys, clock: clock) }
}
