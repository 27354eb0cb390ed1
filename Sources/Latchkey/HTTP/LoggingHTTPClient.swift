import Foundation
import Logging

/// One debug line per exchange — method, path, status, milliseconds — on the client's `Logger`. Never a query string,
/// a header or a body: that is where codes, tokens, verifiers and passwords travel, and logs end up in crash reports,
/// consoles and support tickets.
struct LoggingHTTPClient: HTTPClient {
    let base: any HTTPClient
    let logger: Logger

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        guard logger.logLevel <= .debug else { return try await base.send(request) }
        let what = "\(request.method) \(request.url.host ?? "")\(request.url.path)"
        let started = ContinuousClock.now
        do {
            let response = try await base.send(request)
            logger.debug("HTTP \(response.status) \(what)", metadata: ["ms": .stringConvertible(Self.milliseconds(since: started))])
            return response
        } catch let error as LatchkeyError {
            logger.debug(
                "HTTP failed \(what)", metadata: ["code": .string(error.code.rawValue), "ms": .stringConvertible(Self.milliseconds(since: started))])
            throw error
        } catch {
            logger.debug("HTTP failed \(what)", metadata: ["ms": .stringConvertible(Self.milliseconds(since: started))])
            throw error
        }
    }

    private static func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let elapsed = ContinuousClock.now - start
        return Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
    }
}
