import Foundation
import NIOConcurrencyHelpers

/// The server's notion of "now". Production uses the system clock; tests move time forward to expire codes and
/// tokens without sleeping.
public struct ServerClock: Sendable {
    private let read: @Sendable () -> Date
    public init(_ read: @escaping @Sendable () -> Date) { self.read = read }
    public var now: Date { read() }
    public static let system = ServerClock { Date() }

    /// A clock that starts at the real time and can be advanced. `frozen`: it then moves only when advanced, so a rule
    /// about the time between two requests (a polling interval, a code's 30-s window) cannot depend on how fast the
    /// machine runs them.
    public static func adjustable(frozen: Bool = false) -> (ServerClock, advance: @Sendable (TimeInterval) -> Void) {
        let offset = NIOLockedValueBox<TimeInterval>(0)
        let start = Date()
        return (
            ServerClock { (frozen ? start : Date()).addingTimeInterval(offset.withLockedValue { $0 }) },
            { delta in offset.withLockedValue { $0 += delta } }
        )
    }
}
