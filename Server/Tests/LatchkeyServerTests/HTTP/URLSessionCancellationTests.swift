import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
import LatchkeyTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `URLSession.cancellationSafeData(for:)`, which every URLSession request of the SDK and the server goes through: on
/// Linux, swift-corelibs-foundation's own cancellation can deadlock with a transfer that completes at that moment (a
/// whole test process stopped that way when a server's shutdown cancelled a webhook delivery).
@Suite("URLSession requests and their callers' cancellation")
struct URLSessionCancellationTests {
    private static func session() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 600  // an answer that never comes must not end the request here
        return URLSession(configuration: configuration)
    }

    @Test("a cancelled caller gets its cancellation while the request is still unanswered")
    func cancellationEndsTheCallWhileTheRequestIsPending() async throws {
        let silent = try LoopbackPort.silent()
        let session = Self.session()
        defer { session.invalidateAndCancel() }
        let call = Task { try await session.cancellationSafeData(for: URLRequest(url: try #require(URL(string: silent.base + "/")))) }
        call.cancel()
        let outcome = await call.result
        switch outcome {
        case .success: Issue.record("a port that never answers answered")
        case .failure(let error):
            #if canImport(Darwin)
            #expect(error is CancellationError || (error as? URLError)?.code == .cancelled)
            #else
            #expect(error is CancellationError, "\(error)")
            #endif
        }
    }

    @Test("requests cancelled at every point of their exchange all end, answered or cancelled, and the session still works")
    func cancellationsRacingCompletionsAllEnd() async throws {
        let server = try await TestServer.start()
        let session = Self.session()
        defer { session.invalidateAndCancel() }
        let url = try #require(URL(string: server.base + "/health"))
        // Each call is cancelled after a different number of scheduler turns, so cancellations land at every point of
        // the exchange. corelibs' own `data(for:)` in this loop stopped the process: a deadlock in the suite, and here
        // (2,000 calls) "Trying to access a behaviour for a task that in not in the registry", a crash.
        for turns in 0..<1_000 {
            let call = Task { try await session.cancellationSafeData(for: URLRequest(url: url)) }
            for _ in 0..<(turns % 40) { await Task.yield() }
            call.cancel()
            switch await call.result {
            case .success(let (_, response)):
                #expect((response as? HTTPURLResponse)?.statusCode == 200)
            case .failure(let error):
                #expect(error is CancellationError || (error as? URLError)?.code == .cancelled, "\(error)")
            }
        }
        let (_, response) = try await session.cancellationSafeData(for: URLRequest(url: url))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        await server.stop()
    }
}
