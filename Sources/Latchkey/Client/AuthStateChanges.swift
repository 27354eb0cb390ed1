import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE

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
    /// Why the session ended, for `.sessionExpired` (nil for every other event).
    public var reason: SessionEndReason?

    /// A change.
    public init(event: Event, sessionId: String?, isSignedIn: Bool, reason: SessionEndReason? = nil) {
        self.event = event; self.sessionId = sessionId; self.isSignedIn = isSignedIn; self.reason = reason
    }
}

/// Why a session ended without the person signing out through this client: the server's answer that the grant is
/// dead. Nothing else ends a session — not a timeout, a 5xx, a 429, an unreachable server or a locked Keychain.
public struct SessionEndReason: Sendable, Equatable {
    /// The SDK's code of the answer (`.invalidGrant`: the refresh token was refused — expired, revoked, replayed).
    public var code: LatchkeyError.Code
    /// The server's OAuth error code (`invalid_grant`), when it sent one.
    public var serverCode: String?
    /// The server's description, or the SDK's (for logs and support, not for the person).
    public var message: String

    /// A reason.
    public init(code: LatchkeyError.Code, serverCode: String?, message: String) {
        self.code = code; self.serverCode = serverCode; self.message = message
    }

    /// The reason a refusal of the token endpoint gives.
    init(refusal error: LatchkeyError) {
        self.init(code: error.code, serverCode: error.serverCode, message: error.message)
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
