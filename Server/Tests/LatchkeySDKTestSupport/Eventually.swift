/// A condition `eventually` waited for in vain.
package struct ConditionNeverHeld: Error, CustomStringConvertible {
    package let description: String
}

/// Waits until `condition` holds, checking it again every few milliseconds on the caller's actor, and throws when it
/// has not held within `bound`. The bound only turns a hang into a failure and is no timing assertion: ten minutes,
/// because a saturated two-core machine (CI, ThreadSanitizer, the PostgreSQL pass with hundreds of servers) can be
/// slower than an idle one by far more than any fixed number of checks allows for — a minute was missed by a burst of
/// ten logins on a fresh clone's PostgreSQL pass. A condition that holds returns at once; only a real failure waits
/// the whole bound. The one helper every suite waits with.
package func eventually(
    _ what: String = "the condition", within bound: Duration = .seconds(600), isolation: isolated (any Actor)? = #isolation,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + bound
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(5))
    }
    if try await condition() { return }
    throw ConditionNeverHeld(description: "never happened within \(bound): \(what)")
}
