import Foundation

/// One kind of delivery (mail, audit webhooks, back-channel logout): where its rows go and how one is sent. The one
/// delivery loop (`DeliveryLoop`) does the rest the same way for every kind: claims under a lease, order, parallelism,
/// retries, give-back when a receiver is unreachable, drops after attempts or age, logs and metrics.
protocol Deliverer: Sendable {
    /// What the rows of one destination are sent to, read once per batch (a webhook's settings, an application's URI).
    associatedtype Target: Sendable

    var kind: DeliveryKind { get }
    /// Rows of one destination claimed at once.
    var batchSize: Int { get }
    /// Attempts to one destination in flight at once, once the pass's first one has shown that the receiver answers.
    var concurrency: Int { get }
    /// The longest attempt any destination's policy allows, in seconds: a claim's lease covers its batch timing out at
    /// it, so that the rows are claimed before their destination is read (nothing is read when nothing is due).
    var leaseTimeoutSeconds: Int { get }
    /// How the logs name one delivery: `attempt` ("email delivery") and `item` ("an email").
    var wording: DeliveryWording { get }
    /// The destinations served at every pass, whose depth is reported even when empty (the configured webhooks, the
    /// relay); nil: those with rows waiting (registered applications).
    var configuredDestinations: [String]? { get }

    /// Every label this kind's metrics carry (a closed set: the series exist at zero from the start).
    var metricsLabels: [String] { get }
    /// The label a destination's metrics carry: its own name when destinations are a closed set (configured webhooks),
    /// one shared name when anyone may add one (registered applications), so the series stay bounded.
    func metricsLabel(of destination: String) -> String
    /// Work done at the start of each pass (back-channel logout queues the sessions ended since the last).
    func beforePass() async
    /// The destination's target and policy, read once rows of it were claimed; nil when it takes no more deliveries (its
    /// claimed rows are dropped, no attempt counted). Throws when they cannot be read now: the claimed rows are given
    /// back for the next pass.
    func target(for destination: String) async throws -> (Target, DeliveryPolicy)?
    /// One attempt of `row` (its `attempts` are the failed ones before this one).
    func send(_ row: QueuedDelivery, to target: Target) async -> DeliveryAnswer
}

extension Deliverer {
    func metricsLabel(of destination: String) -> String { destination }
    func beforePass() async {}
}

/// What one attempt came to, as its deliverer saw it.
enum DeliveryAnswer: Sendable, Equatable {
    /// The receiver took it (a 2xx, the relay's 250 to the message): the row is deleted.
    case delivered
    /// It did not. `unreachable`: no answer at all (no connection, no answer in time), so the destination's other rows
    /// wait for the same retry, no attempt counted for them; `permanent`: retrying cannot help (a relay's 5xx to the
    /// recipient), so it is given up now. `reason` is for the log: never a secret, never a body.
    case failed(_ reason: String, unreachable: Bool = false, permanent: Bool = false)
}

extension DeliveryAnswer {
    /// An HTTP receiver's answer (`OutboundHTTPClient.deliver`): any 2xx takes the delivery; another status is a failed
    /// attempt of a receiver that answers; no answer at all is unreachable.
    init(_ outcome: OutboundHTTPClient.DeliveryOutcome) {
        switch outcome {
        case .status(let status) where (200..<300).contains(status): self = .delivered
        case .status(let status): self = .failed("answered \(status)")
        case .unreachable(let reason): self = .failed(reason, unreachable: true)
        }
    }
}

/// How the logs name one kind's deliveries: "\(attempt) failed; will retry", "giving up on \(item)".
struct DeliveryWording: Sendable {
    var attempt: String
    var item: String
}
