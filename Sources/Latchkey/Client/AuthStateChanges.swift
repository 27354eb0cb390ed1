import Foundation

/// A change of a session's state, as `LatchkeyClient.authStateChanges(sessionId:)` reports it — what supabase-swift's
/// `authStateChanges` and Firebase's state listener give apps, so they never poll `isSignedIn`.
public struct AuthStateChange: Sendable, Equatable {
    /// What happened.
    public enum Event: String, Sendable, Equatable {
        /// The first event of every stream: the session as it is when the stream starts (restored from storage).
        case initialSession
        /// A sign-in of any kind stored new tokens.
        case signedIn
        /// `signOut` or `clearSession` forgot the session.
        case signedOut
        /// A refresh replaced the tokens.
        case tokenRefreshed
        /// The provider ended the session (the refresh token was refused): sign in again.
        case sessionExpired
        /// `updateUserProfile` changed the signed-in user.
        case userUpdated
    }

    /// What happened.
    public var event: Event
    /// The session (nil: the default session).
    public var sessionId: String?
    /// Whether the session holds usable tokens after the change.
    public var isSignedIn: Bool

    /// A change.
    public init(event: Event, sessionId: String?, isSignedIn: Bool) {
        self.event = event; self.sessionId = sessionId; self.isSignedIn = isSignedIn
    }
}

/// Fans changes out to the streams of one client. A stream first gets its `initialSession` (read asynchronously from
/// storage); changes published meanwhile wait behind it, so every stream sees the events in order.
final class AuthStateBroadcaster: Sendable {
    private struct Subscriber {
        var sessionId: String?
        var continuation: AsyncStream<AuthStateChange>.Continuation
        /// Changes that arrived before the initial event was delivered; nil once it was.
        var queued: [AuthStateChange]? = []
    }

    private let subscribers = Locked<[UUID: Subscriber]>([:])

    /// A stream for `sessionId`; `initial` reads whether it is signed in now.
    func stream(sessionId: String?, initial: @escaping @Sendable () async -> Bool) -> AsyncStream<AuthStateChange> {
        let (stream, continuation) = AsyncStream<AuthStateChange>.makeStream(bufferingPolicy: .unbounded)
        let id = UUID()
        subscribers.withLock { $0[id] = Subscriber(sessionId: sessionId, continuation: continuation) }
        let reader = Task {
            let signedIn = await initial()
            let queued: [AuthStateChange] = subscribers.withLock { all in
                let queued = all[id]?.queued ?? []
                all[id]?.queued = nil
                return queued
            }
            continuation.yield(AuthStateChange(event: .initialSession, sessionId: sessionId, isSignedIn: signedIn))
            for change in queued { continuation.yield(change) }
        }
        continuation.onTermination = { [weak self] _ in
            reader.cancel()
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    func publish(_ change: AuthStateChange) {
        let ready: [AsyncStream<AuthStateChange>.Continuation] = subscribers.withLock { all in
            var ready: [AsyncStream<AuthStateChange>.Continuation] = []
            for (id, subscriber) in all where subscriber.sessionId == change.sessionId {
                if subscriber.queued != nil { all[id]?.queued?.append(change) } else { ready.append(subscriber.continuation) }
            }
            return ready
        }
        for continuation in ready { continuation.yield(change) }
    }
}
