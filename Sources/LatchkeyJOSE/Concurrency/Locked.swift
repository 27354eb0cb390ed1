import Foundation

/// A value behind a lock, for the few pieces of state synchronous code must read without an actor hop. Nothing escapes
/// the closure.
///
/// Here because LatchkeyJOSE is the one module the SDK and the server share (`RemoteKeySet` publishes its keys through
/// it); not part of the SDK's API (`@_spi(LatchkeyInternal)`).
@_spi(LatchkeyInternal) public final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()

    public init(_ value: Value) { self.value = value }

    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
