import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE

/// The time every rule of the SDK decides by: when an access token is due for refresh, when a device code has
/// expired, how long to wait between two device polls, when the key set may be fetched again, when a pending sign-in
/// or a flow is forgotten, and (corrected by the provider's `Date` headers) the ID token and DPoP time checks.
///
/// Production uses ``system``. Tests, the app's included, pass a ``ManualClock``'s clock to
/// ``LatchkeyClient/init(http:userAgent:logger:defaultStorage:clock:)`` and move time themselves, so a test of "the
/// token is refreshed once it expires" never waits for it, and passes the same on a machine busy with other work.
public struct LatchkeyClock: Sendable {
    /// The current time.
    public let now: @Sendable () -> Date
    /// Waits `seconds` of this clock's time (a device poll's interval); throws `CancellationError` when the task is
    /// cancelled.
    public let sleep: @Sendable (_ seconds: TimeInterval) async throws -> Void
    /// Whether this is the device's own clock (the access-token cache then reads it without a call).
    let isSystem: Bool

    /// A clock of your own: `now` is read for every decision, `sleep` waits for a device poll.
    public init(now: @escaping @Sendable () -> Date, sleep: @escaping @Sendable (_ seconds: TimeInterval) async throws -> Void) {
        self.init(now: now, sleep: sleep, isSystem: false)
    }

    private init(now: @escaping @Sendable () -> Date, sleep: @escaping @Sendable (TimeInterval) async throws -> Void, isSystem: Bool) {
        self.now = now
        self.sleep = sleep
        self.isSystem = isSystem
    }

    /// The device's clock; sleeps are real.
    public static let system = LatchkeyClock(
        now: { Date() },
        sleep: { seconds in try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000)) },
        isSystem: true)

    /// The device's clock shifted by `offset` seconds (a device whose clock is set wrong); sleeps are real.
    public static func offset(by offset: TimeInterval) -> LatchkeyClock {
        LatchkeyClock(now: { Date().addingTimeInterval(offset) }, sleep: system.sleep)
    }
}

/// Time that moves only when told: ``advance(by:)``, ``set(_:)``, or a ``LatchkeyClock/sleep`` of its ``clock``,
/// which moves it by the sleep's duration and returns at once (a device sign-in's polls follow one another without
/// waiting, each `interval` seconds later than the last as far as every rule can tell).
public final class ManualClock: Sendable {
    private let current: Locked<Date>

    /// - Parameter start: the time it shows until moved (default: the device's time when made).
    public init(start: Date = Date()) { current = Locked(start) }

    /// The time it shows.
    public var now: Date { current.withLock { $0 } }

    /// Moves it forwards (or, negative, backwards) by `seconds`.
    public func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }

    /// Sets it to `date`.
    public func set(_ date: Date) { current.withLock { $0 = date } }

    /// The clock to give the SDK.
    public var clock: LatchkeyClock {
        LatchkeyClock(
            now: { [current] in current.withLock { $0 } },
            sleep: { [current] seconds in
                try Task.checkCancellation()
                current.withLock { $0 = $0.addingTimeInterval(max(0, seconds)) }
                await Task.yield()
            })
    }
}
