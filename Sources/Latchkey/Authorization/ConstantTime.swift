import Foundation

/// Compares two secrets (a `state`, a `nonce`) without an early exit, so the time taken does not tell an attacker
/// how many leading characters were right.
func constantTimeEquals(_ a: String, _ b: String) -> Bool {
    let x = Array(a.utf8), y = Array(b.utf8)
    guard x.count == y.count else { return false }
    return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
}
