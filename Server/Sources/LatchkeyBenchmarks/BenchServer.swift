import Foundation
import LatchkeyServer
import Logging

/// A development server in-process on a free loopback port with its own SQLite file, for the benchmarks.
struct BenchServer {
    let server: IdentityServer
    let port: Int
    private let task: Task<Void, any Error>
    private let path: String

    static func start(configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> BenchServer {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-bench-\(UUID().uuidString).sqlite").path
        var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: path, host: "127.0.0.1")
        configuration.bcryptCost = 4
        // The sign-in benchmarks time the password and the code; the passkey offer is a page between them that a
        // browser without a passkey authenticator passes by itself.
        configuration.webAuthn.offerAfterPassword = false
        configure(&configuration)
        var logger = Logger(label: "bench")
        logger.logLevel = .critical
        let server = try await IdentityServer.open(configuration: configuration, logger: logger)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = server.application { continuation.yield($0) }
        let task = Task { try await app.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw BenchError("server did not start") }
        return BenchServer(server: server, port: port, task: task, path: path)
    }

    func stop() async {
        task.cancel()
        _ = await task.result
        try? FileManager.default.removeItem(atPath: path)
    }
}
