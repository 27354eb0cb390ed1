import Foundation

/// How a session's tokens are written to a storage adapter, and how every format this SDK ever wrote is read back.
///
/// An app update must never sign people out because the stored item changed shape, so the item carries a version and
/// each earlier layout has a reader here (with a fixture test each):
///
/// - **Version 1** (every release before this one, no version field): `TokenSet`'s synthesized `Codable` with
///   `JSONEncoder`'s defaults — camel-case keys and `expiresAt` as seconds since 2001-01-01. It grew optional keys
///   over time (`dpopKey`, then `browser`); older items simply lack them.
/// - **Version 2** (written now): `{"format": "latchkey.session", "version": 2, "tokens": {…}}` with snake-case keys
///   and `expires_at` in seconds since 1970, a layout of its own, so a later change to `TokenSet` cannot silently
///   change what is on disk.
///
/// Reading migrates in memory only; the item is written in the current format with the session's next change (a
/// refresh, a sign-in). Rewriting it on read could put back a set that another process (an app extension sharing the
/// Keychain item) rotated in between.
///
/// An item that none of the readers understands — damaged, or written by a newer SDK after a downgrade — is reported
/// (`LatchkeyError.Code.storedSessionUnreadable`) and left in place; it is never taken for "signed out" and deleted.
enum StoredSession {
    /// The version written now.
    static let currentVersion = 2
    static let formatName = "latchkey.session"

    /// The session's item in the current format.
    static func encode(_ tokens: TokenSet) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(Envelope(format: formatName, version: currentVersion, tokens: Version2(tokens)))
    }

    /// The tokens of an item written by any version of this SDK.
    /// - Throws: `.storedSessionUnreadable` (never the item's contents) when no reader understands it.
    static func decode(_ data: Data) throws -> TokenSet {
        let decoder = JSONDecoder()
        guard let header = try? decoder.decode(Header.self, from: data) else {
            throw LatchkeyError(.storedSessionUnreadable, "the stored session is not a JSON object; it was kept, sign in again to replace it")
        }
        guard let version = header.version else {
            // Version 1 has no header; its required keys are what tells it apart from damage.
            guard let tokens = try? decoder.decode(TokenSet.self, from: data) else {
                throw LatchkeyError(.storedSessionUnreadable, "the stored session (format 1) lacks required fields; it was kept")
            }
            return tokens
        }
        if version == currentVersion, header.format == formatName {
            guard let envelope = try? decoder.decode(Envelope.self, from: data) else {
                throw LatchkeyError(.storedSessionUnreadable, "the stored session (format 2) lacks required fields; it was kept")
            }
            return envelope.tokens.tokenSet
        }
        if version > currentVersion, header.format == formatName {
            throw LatchkeyError(
                .storedSessionUnreadable,
                "the stored session was written by a newer version of the SDK (format \(version)); this one reads up to \(currentVersion). It was kept"
            )
        }
        throw LatchkeyError(.storedSessionUnreadable, "the stored session has an unknown format (\(header.format ?? "-") \(version)); it was kept")
    }

    private struct Header: Decodable {
        var format: String?
        var version: Int?
    }

    private struct Envelope: Codable {
        var format: String
        var version: Int
        var tokens: Version2
    }

    /// Version 2's token layout: its own keys and an epoch date, independent of `TokenSet`'s Swift shape.
    private struct Version2: Codable {
        var accessToken: String
        var refreshToken: String?
        var idToken: String?
        var tokenType: String
        var expiresAt: Double
        var scope: String?
        var nonce: String?
        var dpopKey: String?
        var browser: SignInBrowser?

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token", refreshToken = "refresh_token", idToken = "id_token", tokenType = "token_type"
            case expiresAt = "expires_at", scope, nonce, dpopKey = "dpop_key", browser
        }

        init(_ tokens: TokenSet) {
            accessToken = tokens.accessToken; refreshToken = tokens.refreshToken; idToken = tokens.idToken
            tokenType = tokens.tokenType; expiresAt = tokens.expiresAt.timeIntervalSince1970; scope = tokens.scope
            nonce = tokens.nonce; dpopKey = tokens.dpopKey; browser = tokens.browser
        }

        var tokenSet: TokenSet {
            var tokens = TokenSet(
                accessToken: accessToken, refreshToken: refreshToken, idToken: idToken, tokenType: tokenType,
                expiresAt: Date(timeIntervalSince1970: expiresAt), scope: scope, nonce: nonce, dpopKey: dpopKey)
            tokens.browser = browser
            return tokens
        }
    }
}
