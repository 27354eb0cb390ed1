import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
#if canImport(Darwin)
import os
#else
import Synchronization
#endif

/// The default session's access token while it is usable, or the refresh in flight, readable without entering the
/// token manager's actor.
///
/// `getAccessToken()` runs before every request an app makes. Through the actor it costs a task switch there and back
/// and a copy of the session's slot (a profile of the benchmark: two thirds of the call); from here it costs one
/// uncontended lock and a coarse clock read. While a refresh runs, callers wait for it here instead of queueing on
/// the actor one by one: with 10,000 callers those actor turns starved the refresh they were waiting for.
///
/// The token manager writes the entry on the actor each time the default session changes (loaded, signed in,
/// refreshing, refreshed, signed out, a write that failed), so the entry never answers differently from the actor at
/// that moment. Anything else — another session, a set still to be saved, no refresh started yet — is left to the
/// actor. The read path is inlinable so that an app's call of `getAccessToken()` compiles down to the lock and the
/// clock, without an async frame of its own.
@usableFromInline
final class AccessTokenCache: Sendable {
    /// `Sendable` said explicitly: `OSAllocatedUnfairLock(initialState:)` requires it, and a `@usableFromInline` type
    /// never has it inferred.
    @usableFromInline
    struct State: Sendable {
        /// The token manager allowed to write: a client's context is replaced whole by `reInitialize`, and a refresh
        /// the old one finishes afterwards must not reach the new one's callers.
        var owner: ObjectIdentifier?
        @usableFromInline var token: String?
        /// Seconds since 1970 from which the token is no longer handed out (its expiry less the refresh skew).
        @usableFromInline var usableUntil: Double = 0
        /// The session's refresh in flight (the task discards its own result if the session changes meanwhile).
        @usableFromInline var refreshing: Task<TokenSet, any Error>?
    }

    /// What a caller of `getAccessToken()` finds here.
    @usableFromInline
    enum Lookup: Sendable {
        case token(String)
        case refreshing(Task<TokenSet, any Error>)
        case askTheManager
    }

    #if canImport(Darwin)
    @usableFromInline let state = OSAllocatedUnfairLock(initialState: State())
    #else
    @usableFromInline let state = Mutex(State())
    #endif

    /// The client's clock when it is not the device's (a test's); nil reads the device's clock directly.
    @usableFromInline let clock: (@Sendable () -> Date)?

    /// - Parameter now: the client's clock when it is not the device's own.
    init(now: (@Sendable () -> Date)? = nil) { clock = now }

    /// The token, if one is cached and usable now (by the client's clock), else the refresh in flight.
    @inlinable
    func lookup() -> Lookup {
        let now = clock.map { $0().timeIntervalSince1970 } ?? Self.now()
        return state.withLock { state in
            if let token = state.token, now < state.usableUntil { return .token(token) }
            if let refreshing = state.refreshing { return .refreshing(refreshing) }
            return .askTheManager
        }
    }

    /// From now on only `owner` writes; what an earlier owner cached is forgotten.
    func bind(to owner: AnyObject) {
        let id = ObjectIdentifier(owner)
        state.withLock { state in
            state = State(owner: id)
        }
    }

    /// Caches `token` until `usableUntil` (or forgets it: `nil`) and the refresh in flight, when `owner` is the bound
    /// writer.
    func update(_ token: String?, usableUntil: Date, refreshing: Task<TokenSet, any Error>?, from owner: AnyObject) {
        let id = ObjectIdentifier(owner), until = usableUntil.timeIntervalSince1970
        state.withLock { state in
            guard state.owner == id else { return }
            state.token = token
            state.usableUntil = token == nil ? 0 : until
            state.refreshing = refreshing
        }
    }

    /// Wall-clock seconds since 1970. On Linux the coarse clock (a few milliseconds' resolution, read without a
    /// system call), ample against a refresh skew of seconds.
    @inlinable
    static func now() -> Double {
        #if os(Linux)
        var spec = timespec()
        // A clock that cannot be read must not read as 1970, where every token looks valid for ever.
        guard clock_gettime(CLOCK_REALTIME_COARSE, &spec) == 0 else { return Date().timeIntervalSince1970 }
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
        #else
        return Date().timeIntervalSince1970
        #endif
    }
}
