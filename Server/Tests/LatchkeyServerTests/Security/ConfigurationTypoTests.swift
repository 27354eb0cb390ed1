import Foundation
@testable import LatchkeyServer
import Testing

/// A typo must not weaken a server: unknown keys at any level of a configuration file are refused at start,
/// with their path and the nearest known key; every key the documentation shows is known.
@Suite("Configuration files: unknown keys are refused with the nearest known one")
struct ConfigurationTypoTests {
    static func load(_ json: String) throws -> ConfigurationFile {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-config-\(UUID().uuidString).json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try ConfigurationFile.load(path: path)
    }

    static func refusal(_ json: String) -> String? {
        do { _ = try load(json); return nil } catch { return "\(error)" }
    }

    @Test("a misspelt key at the top, in the login policy, in a client and in SMTP settings: refused, with the key meant")
    func typosAreRefused() throws {
        let top = try #require(Self.refusal(#"{"portt": 9000, "clientz": []}"#))
        #expect(
            top.contains("`clientz`: unknown key; did you mean `clients`?") && top.contains("`portt`: unknown key; did you mean `port`?"), "\(top)")
        let policy = try #require(Self.refusal(#"{"login_policy": {"require_mfa": true, "max_failures_per_adress": 3}}"#))
        #expect(policy.contains("`login_policy.max_failures_per_adress`: unknown key; did you mean `max_failures_per_address`?"), "\(policy)")
        #expect(policy.contains("`login_policy.require_mfa`: unknown key"), "a client's key in the wrong place is unknown there: \(policy)")
        let client = try #require(Self.refusal(#"{"clients": [{"client_id": "a"}, {"client_id": "b", "requre_mfa": true}]}"#))
        #expect(client.contains("`clients[1].requre_mfa`: unknown key; did you mean `require_mfa`?"), "\(client)")
        let smtp = try #require(Self.refusal(#"{"smtp": {"host": "127.0.0.1", "from": "a@example.com", "start_tls": "required"}}"#))
        #expect(smtp.contains("`smtp.start_tls`: unknown key; did you mean `starttls`?"), "\(smtp)")
        let far = try #require(Self.refusal(#"{"colour": "blue"}"#))
        #expect(far.contains("`colour`: unknown key") && !far.contains("did you mean"), "no suggestion when nothing is close: \(far)")
    }

    @Test("free-form values keep their own keys: user claims and client flows are data, not configuration keys")
    func freeFormValuesAreNotChecked() throws {
        let file = try Self.load(
            #"{"users": [{"username": "a@example.com", "password": "correct horse battery staple", "claims": {"anything_at_all": "x"}}]}"#)
        #expect(file.users?.first?.claims["anything_at_all"] == "x")
    }

    @Test("the documented example configuration (docs/configuration.md) has no unknown key")
    func readmeExampleIsKnown() throws {
        let readme = try String(
            contentsOfFile: #filePath.components(separatedBy: "/Server/Tests/")[0] + "/docs/configuration.md", encoding: .utf8)
        let start = try #require(readme.range(of: "```json\n"))
        let end = try #require(readme.range(of: "\n```", range: start.upperBound..<readme.endIndex))
        let example = String(readme[start.upperBound..<end.lowerBound])
        _ = try Self.load(example)
    }

    @Test("the nearest key: close misspellings are suggested, distant ones are not")
    func nearest() {
        #expect(ConfigurationShape.nearest(to: "clientz", in: ["clients", "users"]) == "clients")
        #expect(ConfigurationShape.nearest(to: "Issuer", in: ["issuer", "users"]) == "issuer")
        #expect(ConfigurationShape.nearest(to: "zzzz", in: ["clients", "users"]) == nil)
        #expect(ConfigurationShape.distance("kitten", "sitting") == 3)
    }
}
