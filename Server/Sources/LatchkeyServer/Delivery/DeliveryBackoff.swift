import Foundation

/// When a failed delivery is tried again, for every queue the server delivers from (mail, audit webhooks, back-channel
/// logout): `retrySeconds` after the first failure, doubling after each next one, never more than an hour apart.
enum DeliveryBackoff {
    /// The longest wait between two attempts.
    static let maximum: TimeInterval = 3600

    /// Seconds to wait after failed attempt number `attempt` (1 for the first).
    static func delay(afterAttempt attempt: Int, retrySeconds: Int) -> TimeInterval {
        // The exponent is capped so that a row attempted very often cannot overflow the power.
        min(Double(retrySeconds) * pow(2, Double(max(0, min(attempt - 1, 30)))), maximum)
    }
}
