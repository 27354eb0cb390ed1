import Foundation
import NIOConcurrencyHelpers

/// The server's notion of "now". Production uses the system clock; tests move time forward to expire codes and
/// tokens without sleeping.
public struct ServerClock: Sendable {
    private let read: @Sendable () -> Date
    public init(_ read: @escaping @Sendable () -> Date) { self.read = read }
    public var now: Date { read() }
    public static let system = ServerClock { Date() }

    /// Time a test moves: the system's plus what it was advanced by. Frozen, it moves only when advanced, so a rule
    /// about the time between two requests (a polling interval, a code's 30-s window) cannot depend on how fast the
    /// machine runs them.
    public final class Adjustable: Sendable {
        private struct State {
            var frozenAt: Date?
            var offset: TimeInterval = 0
        }
        private let state: NIOLockedValueBox<State>

        /// - Parameter frozen: stand still from now on (else follow the system's clock).
        public init(frozen: Bool = false) { state = NIOLockedValueBox(State(frozenAt: frozen ? Date() : nil)) }

        public var now: Date { state.withLockedValue { ($0.frozenAt ?? Date()).addingTimeInterval($0.offset) } }
        public var clock: ServerClock { ServerClock { self.now } }

        /// Moves it by `seconds` (negative: back).
        public func advance(by seconds: TimeInterval) { state.withLockedValue { $0.offset += seconds } }

        /// Stops it where it is: from now on it moves only by `advance(by:)`.
        public func freeze() { state.withLockedValue { $0.frozenAt = $0.frozenAt ?? Date() } }
    }
}
