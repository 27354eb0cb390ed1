import Foundation
@testable import Latchkey
import Testing

/// Every format this SDK ever stored a session in is read back, the current one is what is written, and an item no
/// reader understands is reported and left alone (never taken for "signed out").
@Suite("SDK: versioned stored sessions")
struct StoredSessionTests {
    /// Format 1 as the first release wrote it (3932547, 21 November): `TokenSet`'s synthesized Codable, dates in
    /// seconds since 2001-01-01 (816,000,000 s is 2026-11-09 08:00 UTC).
    static let format1FirstRelease = #"""
        {"accessToken":"at-1","refreshToken":"rt-1","idToken":"id-1","tokenType":"Bearer","expiresAt":816000000,"scope":"openid profile","nonce":"n-1"}
        """#
    /// Format 1 once DPoP keys were kept with the tokens (06ebaa1, 24 November).
    static let format1WithDPoPKey = #"""
        {"accessToken":"at-2","refreshToken":"rt-2","tokenType":"DPoP","expiresAt":816000000.5,"dpopKey":"software-key"}
        """#
    /// Format 1 once sessions recorded their browser (5e227ba, 26 November): the last format 1.
    static let format1WithBrowser = #"""
        {"accessToken":"at-3","refreshToken":"rt-3","idToken":"id-3","tokenType":"Bearer","expiresAt":816000000,"scope":"openid","nonce":"n-3","browser":"withoutBrowser"}
        """#
    /// Format 2 as this release writes it.
    static let format2 = #"""
        {"format":"latchkey.session","tokens":{"access_token":"at-4","browser":"userAgent","dpop_key":"key-4","expires_at":1794729600,"id_token":"id-4","nonce":"n-4","refresh_token":"rt-4","scope":"openid","token_type":"DPoP"},"version":2}
        """#

    static let expiry = Date(timeIntervalSinceReferenceDate: 816_000_000)

    @Test("format 1 of each stage and format 2 are read, field by field")
    func everyFormatIsRead() throws {
        let first = try StoredSession.decode(Data(Self.format1FirstRelease.utf8))
        #expect(first.accessToken == "at-1" && first.refreshToken == "rt-1" && first.idToken == "id-1" && first.tokenType == "Bearer")
        #expect(first.expiresAt == Self.expiry && first.scope == "openid profile" && first.nonce == "n-1")
        #expect(first.dpopKey == nil && first.browser == nil, "keys that did not exist yet are absent, not invented")

        let dpop = try StoredSession.decode(Data(Self.format1WithDPoPKey.utf8))
        #expect(dpop.tokenType == "DPoP" && dpop.dpopKey == "software-key" && dpop.idToken == nil && dpop.scope == nil)
        #expect(dpop.expiresAt == Self.expiry.addingTimeInterval(0.5))

        let browser = try StoredSession.decode(Data(Self.format1WithBrowser.utf8))
        #expect(browser.browser == .withoutBrowser && browser.nonce == "n-3")

        let current = try StoredSession.decode(Data(Self.format2.utf8))
        #expect(current.accessToken == "at-4" && current.refreshToken == "rt-4" && current.idToken == "id-4" && current.tokenType == "DPoP")
        #expect(current.expiresAt == Date(timeIntervalSince1970: 1_794_729_600) && current.dpopKey == "key-4" && current.browser == .userAgent)
    }

    @Test("what is written is format 2, byte for byte the fixture, and reads back equal")
    func currentFormatIsWritten() throws {
        var tokens = TokenSet(
            accessToken: "at-4", refreshToken: "rt-4", idToken: "id-4", tokenType: "DPoP", expiresAt: Date(timeIntervalSince1970: 1_794_729_600),
            scope: "openid", nonce: "n-4", dpopKey: "key-4")
        tokens.browser = .userAgent
        let written = try StoredSession.encode(tokens)
        #expect(String(decoding: written, as: UTF8.self) == Self.format2, "a change of the layout is a new version, not an edit")
        #expect(try StoredSession.decode(written) == tokens)
        let migrated = try StoredSession.decode(Data(Self.format1WithBrowser.utf8))
        #expect(try StoredSession.decode(try StoredSession.encode(migrated)) == migrated, "format 1 migrates without loss")
    }

    @Test(
        "an item no reader understands is .storedSessionUnreadable, and says why without its contents",
        arguments: [
            ("not json at all", "not a JSON object"),
            ("[1,2]", "not a JSON object"),
            (#"{"accessToken":"secret-at"}"#, "format 1"),
            (#"{"format":"latchkey.session","version":2,"tokens":{"access_token":"secret-at"}}"#, "format 2"),
            (#"{"format":"latchkey.session","version":3,"tokens":{}}"#, "newer version of the SDK (format 3)"),
            (#"{"format":"someone-else","version":2}"#, "unknown format")
        ])
    func unreadableItemsAreReported(item: String, why: String) {
        #expect {
            try StoredSession.decode(Data(item.utf8))
        } throws: { error in
            guard let error = error as? LatchkeyError else { return false }
            return error.code == .storedSessionUnreadable && error.message.contains(why) && !error.message.contains("secret-at")
        }
    }

    @Test("the token manager reports an unreadable item, keeps it, and a new sign-in replaces it")
    func unreadableItemIsKept() async throws {
        let storage = InMemoryStorageAdapter()
        let key = TokenManager.key(nil)
        let newer = Data(#"{"format":"latchkey.session","version":3,"tokens":{}}"#.utf8)
        await storage.set(key, newer)
        let manager = TokenManager(storage: storage) { _ in throw LatchkeyError(.networkError, "no refresh expected") }
        await #expect { try await manager.tokens(nil) } throws: { ($0 as? LatchkeyError)?.code == .storedSessionUnreadable }
        await #expect { try await manager.accessToken(nil) } throws: { ($0 as? LatchkeyError)?.code == .storedSessionUnreadable }
        #expect(await storage.get(key) == newer, "left where it was")
        let fresh = TokenSet(
            accessToken: "a", refreshToken: "r", idToken: nil, expiresAt: Date(timeIntervalSince1970: 1_900_000_000), scope: nil, nonce: nil)
        try await manager.replace(fresh, sessionId: nil)
        #expect(try StoredSession.decode(try #require(await storage.get(key))) == fresh)
    }

    @Test("a format 1 session is used as it is and written as format 2 with its next refresh")
    func format1IsMigratedByTheNextWrite() async throws {
        let storage = InMemoryStorageAdapter()
        let key = TokenManager.key(nil)
        await storage.set(key, Data(Self.format1FirstRelease.utf8))  // expired in 2026-11-09: due for refresh
        let manager = TokenManager(storage: storage, now: { Self.expiry.addingTimeInterval(3600) }) { old in
            TokenSet(
                accessToken: "at-new", refreshToken: "rt-new", idToken: old.idToken, expiresAt: Self.expiry.addingTimeInterval(7200),
                scope: old.scope, nonce: old.nonce)
        }
        #expect(try await manager.tokens(nil)?.refreshToken == "rt-1")
        #expect(await storage.get(key) == Data(Self.format1FirstRelease.utf8), "reading does not rewrite")
        #expect(try await manager.accessToken(nil) == "at-new")
        let written = try #require(await storage.get(key))
        #expect(String(decoding: written, as: UTF8.self).contains(#""version":2"#))
        #expect(try StoredSession.decode(written).nonce == "n-1", "the original sign-in's nonce survived the migration")
    }
}
