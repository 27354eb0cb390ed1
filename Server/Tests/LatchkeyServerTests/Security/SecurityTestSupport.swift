import LatchkeyTestSupport
import Foundation
@testable import LatchkeyServer
import Testing

/// Holds password hashes inside the server (through `PasswordHasher.probe`) until released, and counts them by
/// kind, so a test can queue a burst of requests before any hash finishes.
actor HashHold {
    private var entered: [HashProbe.Kind] = []
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var released = false
    private let holding: Set<HashProbe.Kind>

    init(holding: Set<HashProbe.Kind>) { self.holding = holding }

    /// Installs the hold on `server`'s hasher.
    static func install(on server: TestServer, holding: Set<HashProbe.Kind>) -> HashHold {
        let hold = HashHold(holding: holding)
        server.server.hasher.probe.install { kind in await hold.enter(kind) }
        return hold
    }

    func enter(_ kind: HashProbe.Kind) async {
        entered.append(kind)
        guard !released, holding.contains(kind) else { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func count(_ kind: HashProbe.Kind) -> Int { entered.filter { $0 == kind }.count }

    func release() {
        released = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

/// Responses collected as concurrent requests finish.
actor Collected {
    private(set) var results: [HTTPResult] = []
    func add(_ result: HTTPResult) { results.append(result) }
    var count: Int { results.count }
}

extension TestServer {
    /// `POST /identity/v1/password/login` (reachFive), from the test's loopback address.
    func passwordLogin(_ identifier: String, _ password: String, headers: [String: String] = [:]) async throws -> HTTPResult {
        try await call(
            "POST", "/identity/v1/password/login", token: nil,
            json: ["email": identifier, "password": password, "client_id": "latchkey-demo"],
            contentType: "application/json", headers: headers)
    }

    /// Rows in `table` (read straight from the database, SQLite or PostgreSQL).
    func rowCount(_ table: String) async throws -> Int {
        if let store = server.store as? PostgresStore { return try await store.rowCount(table: table) }
        let store = try #require(server.store as? SQLiteStore)
        return try await store.rowCount(table: table)
    }
}

extension HTTPResult {
    /// The message key in the reachFive (`error_message_key`) or thunderID (`message.key`) error shape.
    var messageKey: String? {
        guard let body = try? json() else { return nil }
        return body["error_message_key"] as? String ?? (body["message"] as? [String: Any])?["key"] as? String
    }
}
