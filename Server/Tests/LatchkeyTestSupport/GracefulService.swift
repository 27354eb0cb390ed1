import Foundation
import Hummingbird
import Logging
import ServiceLifecycle

/// Runs a service (a Hummingbird application) in a `ServiceGroup` until `stop()`, which shuts it down gracefully.
///
/// Not by cancelling its task: a cancelled Hummingbird server leaves connections it accepted but had not yet taken up
/// unclosed, and SwiftNIO traps on those ("Deinited NIOAsyncWriter without calling finish()", swift-nio #3481) — seen
/// here on a saturated machine, where a test's last requests are still arriving as it stops its server. A shutdown
/// that takes longer than `maximumShutdown` (a client that never lets go) is escalated to cancellation.
package final class GracefulService: Sendable {
    private let group: ServiceGroup
    package let task: Task<Void, any Error>

    package init(
        _ service: some Service, logger: Logger, maximumShutdown: Duration = .seconds(10),
        onEnd: @escaping @Sendable ((any Error)?) -> Void = { _ in }
    ) {
        var configuration = ServiceGroupConfiguration(services: [service], logger: logger)
        configuration.maximumGracefulShutdownDuration = maximumShutdown
        let group = ServiceGroup(configuration: configuration)
        self.group = group
        task = Task {
            do {
                try await group.run()
                onEnd(nil)
            } catch {
                onEnd(error)
                throw error
            }
        }
    }

    /// Shuts the service down gracefully and waits until it has ended.
    package func stop() async {
        await group.triggerGracefulShutdown()
        _ = await task.result
    }
}

extension GracefulService {
    /// Serves `router` on a free port of 127.0.0.1 (a stand-in of another party: Apple's key server, a provider
    /// double) until `stop()`, and returns once it listens. `label` names its logger, which only logs criticals.
    package static func serve(_ router: Router<BasicRequestContext>, label: String) async throws -> (port: Int, service: GracefulService) {
        var logger = Logger(label: label)
        logger.logLevel = .critical
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let service = GracefulService(app, logger: logger)
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw TestFailure("\(label) did not start") }
        return (port, service)
    }
}
