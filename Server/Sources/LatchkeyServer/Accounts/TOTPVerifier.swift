import Foundation
import HummingbirdOTP

/// RFC 6238 verification, the one place every TOTP code is checked (flows, step-up, and any later caller): the code
/// must match a time step within ±1 of now, and that step must be later than the last one accepted for the factor
/// (RFC 6238 §5.2: a code is accepted once), which the store records with one conditional update.
enum TOTPVerifier {
    static let period: TimeInterval = 30
    /// How many steps either side of now are accepted (clock drift).
    static let window = 1

    /// The time step `code` matches, or nil. Every candidate is compared in constant time, with no early exit.
    static func matchingStep(secret: String, code: String, now: Date) -> Int64? {
        let totp = TOTP(secret: secret)
        let current = Int64((now.timeIntervalSince1970 / period).rounded(.down))
        var matched: Int64?
        for offset in -window...window {
            let step = current + Int64(offset)
            let candidate = String(format: "%06d", totp.compute(date: Date(timeIntervalSince1970: TimeInterval(step) * period)))
            // The latest matching step wins: the replay mark must cover every step the code could stand for.
            if Secrets.constantTimeEquals(candidate, code) { matched = step }
        }
        return matched
    }
}

extension Accounts {
    /// Whether `code` is a fresh TOTP code of the user's authenticator: right for a step within the window and not
    /// used before (the step is then spent atomically, so of two requests with the same code only one succeeds).
    /// False when the user has no TOTP factor.
    func verifyTOTP(userId: String, code: String) async throws -> Bool {
        guard let factor = try await store.factors(userId: userId).first(where: { $0.kind == .totp }) else { return false }
        let submitted = code.filter { !$0.isWhitespace }
        guard let step = TOTPVerifier.matchingStep(secret: factor.secret, code: submitted, now: clock.now) else { return false }
        return try await store.acceptTOTPStep(userId: userId, step: step)
    }
}
