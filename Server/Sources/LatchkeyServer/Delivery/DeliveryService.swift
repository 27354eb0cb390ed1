import ServiceLifecycle

/// Runs one of the server's delivery loops (mail, audit webhooks, back-channel logout) beside the HTTP server, in its
/// service group: the loop is cancelled at the group's graceful shutdown, and rows it had claimed wait for their lease.
struct DeliveryService: Service {
    let loop: @Sendable () async -> Void

    func run() async throws {
        await cancelWhenGracefulShutdown { await loop() }
    }
}
