import Foundation

/// How one destination's deliveries are tried: how long an attempt may take, how often and for how long a failed one
/// is tried again, and how many may wait. One value per destination (a webhook's settings, the SMTP relay's, the
/// back-channel logout defaults), read by the one delivery loop (`DeliveryLoop`).
struct DeliveryPolicy: Sendable, Equatable {
    /// Seconds one attempt may take (connection, request and answer).
    var timeoutSeconds: Int
    /// Attempts before the delivery is given up.
    var maxAttempts: Int
    /// Seconds after it was queued past which a delivery is given up, whatever its attempts.
    var maxAgeSeconds: Int
    /// The wait before the first retry; doubled after each next failure, never more than `maximumRetryDelay`.
    var retrySeconds: Int
    /// Deliveries that may wait for the destination; past it new ones are refused (not queued).
    var queueLimit: Int

    /// The longest wait between two attempts.
    static let maximumRetryDelay: TimeInterval = 3600

    /// Seconds to wait after failed attempt number `attempt` (1 for the first).
    func retryDelay(afterAttempt attempt: Int) -> TimeInterval {
        // The exponent is capped so that a row attempted very often cannot overflow the power.
        min(Double(retrySeconds) * pow(2, Double(max(0, min(attempt - 1, 30)))), Self.maximumRetryDelay)
    }
}
