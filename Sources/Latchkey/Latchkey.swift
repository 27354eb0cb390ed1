/// Latchkey SDK core.
///
/// The OpenID Connect client, token lifecycle and the ReachFive- and ThunderID-style APIs arrive with the SDK issue;
/// this module already provides the pieces every flow builds on: PKCE (`PKCEPair`) and, re-exported, JOSE verification
/// (`CompactJWS`, `JWKSet`) shared with the server.
@_exported import LatchkeyJOSE
