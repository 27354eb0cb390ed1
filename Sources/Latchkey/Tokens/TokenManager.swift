import Foundation

/// Owns every session's token set. Refresh is single-flight per session: concurrent callers share one request.
/// A refresh that finishes after sign-out or a newer sign-in is discarded (each session has a generation that
/// both bump), and tokens are cleared only on a definitive `invalid_grant`.
actor TokenManager {
    typealias Refresher = @Sendable (TokenSet) async throws -> TokenSet

    private struct Slot {
        var tokens: TokenSet?
        var loaded = false
        var generation = 0
        var refresh: (generation: Int, task: Task<TokenSet, any Error>)?
        /// The tokens in memory are newer than the stored ones: writing them failed (a locked device's Keychain).
        var unsaved = false
        /// With shared storage, the refresh token the unsaved set replaced: the stored set is overwritten later only
        /// while it still holds that one (no other process has moved on meanwhile).
        var unsavedPredecessor: String?
    }

    private var slots: [String: Slot] = [:]
    /// Sessions being read from storage: concurrent first callers share one read (and one decode) per session.
    private var loads: [String: Task<TokenSet?, any Error>] = [:]
    private let storage: any StorageAdapter
    private let refresher: Refresher
    /// Refresh this long before expiry, so a token is never sent in its last seconds.
    private let skew: TimeInterval

    /// Told of every sign-in, sign-out, refresh and expiry (the client's `authStateChanges`).
    private let changes: AuthStateBroadcaster?
    /// Where the default session's usable access token is published for the client's lock-only fast path.
    private let cache: AccessTokenCache?

    /// The device's time (the client's clock): what "expires within the skew" is measured against.
    private let now: @Sendable () -> Date

    init(
        storage: any StorageAdapter, skew: TimeInterval = 30, changes: AuthStateBroadcaster? = nil, cache: AccessTokenCache? = nil,
        now: @escaping @Sendable () -> Date = { Date() }, refresher: @escaping Refresher
    ) {
        self.now = now
        self.storage = storage
        self.skew = skew
        self.changes = changes
        self.cache = cache
        self.refresher = refresher
    }

    /// Publishes the default session's state to the cache. Called on the actor after every change of that slot, so
    /// the cache never answers differently from the actor: only a loaded, saved set is cached, until its expiry less
    /// the skew, and only the refresh of the slot's current generation.
    private func publish(_ key: String) {
        guard let cache, key == Self.defaultKey else { return }
        let slot = slots[key]
        let refreshing = slot.flatMap { slot in slot.refresh.flatMap { $0.generation == slot.generation ? $0.task : nil } }
        if let slot, slot.loaded, !slot.unsaved, let tokens = slot.tokens {
            cache.update(tokens.accessToken, usableUntil: tokens.expiresAt.addingTimeInterval(-skew), refreshing: refreshing, from: self)
        } else {
            cache.update(nil, usableUntil: .distantPast, refreshing: refreshing, from: self)
        }
    }

    static func key(_ sessionId: String?) -> String {
        guard let sessionId else { return defaultKey }
        return "latchkey.session." + sessionId
    }

    /// The default session's key, made once: `getAccessToken()` is called for every request an app makes.
    private static let defaultKey = "latchkey.session.default"

    /// The loaded session whose access token is `accessToken` (an `AuthToken` the app passes back), to present it the
    /// way its session requires (DPoP).
    func session(holding accessToken: String) -> TokenSet? {
        slots.values.lazy.compactMap(\.tokens).first { $0.accessToken == accessToken }
    }

    func tokens(_ sessionId: String?) async throws -> TokenSet? {
        let key = Self.key(sessionId)
        if let slot = slots[key], slot.loaded {
            if slot.unsaved { await saveAgain(sessionId) }
            return slot.tokens
        }
        let load: Task<TokenSet?, any Error>
        if let inFlight = loads[key] {
            load = inFlight
        } else {
            let storage = self.storage
            // An item no reader understands throws (`.storedSessionUnreadable`) and stays where it is: taking it
            // for "signed out" is how an update signs people out.
            load = Task { try await storage.get(key).map { try StoredSession.decode($0) } }
            loads[key] = load
        }
        defer { if loads[key] == load { loads[key] = nil } }
        let stored = try await load.value
        // A sign-in or sign-out while the read was in flight wins over what was read.
        if slots[key]?.loaded != true {
            slots[key, default: Slot()].tokens = stored
            slots[key, default: Slot()].loaded = true
            publish(key)
        }
        return slots[key]?.tokens
    }

    /// A new sign-in: replaces the session's tokens and invalidates any refresh still in flight.
    func replace(_ tokens: TokenSet, sessionId: String?) async throws {
        let key = Self.key(sessionId)
        startNewGeneration(key, tokens: tokens)
        changes?.publish(AuthStateChange(event: .signedIn, sessionId: sessionId, isSignedIn: true))
        try await storage.set(key, try StoredSession.encode(tokens))
    }

    /// Sign-out: forgets the tokens and invalidates any refresh still in flight.
    func clear(_ sessionId: String?, because event: AuthStateChange.Event = .signedOut, reason: SessionEndReason? = nil) async throws {
        let key = Self.key(sessionId)
        let hadTokens = slots[key]?.tokens != nil || slots[key]?.loaded != true
        startNewGeneration(key, tokens: nil)
        if hadTokens { changes?.publish(AuthStateChange(event: event, sessionId: sessionId, isSignedIn: false, reason: reason)) }
        try await storage.remove(key)
    }

    /// Retries writing a refreshed set that could not be stored; it stays marked when the write fails again.
    private func saveAgain(_ sessionId: String?) async {
        let key = Self.key(sessionId)
        guard let tokens = slots[key]?.tokens, let data = try? StoredSession.encode(tokens) else { return }
        let generation = slots[key]?.generation
        if let shared = storage as? any SharedStorageAdapter {
            // Under the lock, and only over the set this one replaced: another process's newer set is adopted
            // instead, and a session it signed out is not written back.
            let predecessor = slots[key]?.unsavedPredecessor
            let ours = tokens.refreshToken
            let outcome: SharedSave? = try? await shared.withExclusiveAccess(to: key) {
                guard let stored = try await shared.get(key).map({ try StoredSession.decode($0) }) else {
                    return .signedOutElsewhere
                }
                guard stored.refreshToken == predecessor || stored.refreshToken == ours else { return .adopt(stored) }
                try await shared.set(key, data)
                return .written
            }
            guard let outcome, slots[key]?.generation == generation else { return }
            switch outcome {
            case .written: break
            case .adopt(let newer): slots[key]?.tokens = newer
            case .signedOutElsewhere:
                try? await clear(sessionId)
                return
            }
            slots[key]?.unsaved = false
            slots[key]?.unsavedPredecessor = nil
            publish(key)
            return
        }
        if (try? await storage.set(key, data)) != nil, slots[key]?.generation == generation {
            slots[key]?.unsaved = false
            publish(key)
        }
    }

    private enum SharedSave: Sendable {
        case written
        case adopt(TokenSet)
        case signedOutElsewhere
    }

    /// Bumping the generation is what makes a refresh started earlier discard its result.
    private func startNewGeneration(_ key: String, tokens: TokenSet?) {
        var slot = slots[key] ?? Slot()
        slot.generation += 1
        slot.tokens = tokens
        slot.loaded = true
        slot.refresh = nil
        slot.unsaved = false
        slot.unsavedPredecessor = nil
        slots[key] = slot
        publish(key)
    }

    /// A usable access token, refreshing first when it expires within the skew. A caller that finds a refresh in
    /// flight waits for it off the actor: ten thousand concurrent callers cost the actor one turn each, and the
    /// refresh's completion wakes them without queueing them on it again.
    nonisolated func accessToken(_ sessionId: String?) async throws -> String {
        switch try await accessTokenOrRefresh(sessionId, now: now()) {
        case .ready(let token): return token
        case .refreshing(let refresh): return try await refresh.value.accessToken
        }
    }

    private enum Access: Sendable {
        case ready(String)
        case refreshing(Task<TokenSet, any Error>)
    }

    private func accessTokenOrRefresh(_ sessionId: String?, now: Date) async throws -> Access {
        // The common case first, without copying the slot or the token set: loaded, saved, not about to expire.
        if let slot = slots[Self.key(sessionId)], slot.loaded, !slot.unsaved, let tokens = slot.tokens, !tokens.isExpired(now: now, skew: skew) {
            return .ready(tokens.accessToken)
        }
        guard let current = try await tokens(sessionId) else { throw LatchkeyError(.sessionExpired, "not signed in") }
        if !current.isExpired(now: now, skew: skew) { return .ready(current.accessToken) }
        return .refreshing(try refreshTask(sessionId))
    }

    /// The session's tokens with a usable access token (refreshed first when it expires within the skew): what a
    /// resource request needs, the token and how to present it (`tokenType`, the DPoP key).
    func usableTokens(_ sessionId: String?) async throws -> TokenSet {
        let now = now()
        guard let current = try await tokens(sessionId) else {
            throw LatchkeyError(.sessionExpired, "not signed in")
        }
        if !current.isExpired(now: now, skew: skew) { return current }
        return try await refreshed(sessionId)
    }

    /// Refreshes (or joins the refresh in flight) and returns the new tokens.
    func refreshed(_ sessionId: String?) async throws -> TokenSet {
        try await refreshTask(sessionId).value
    }

    /// The session's refresh in flight, or a new one. The task finishes the refresh itself, on the actor: it discards
    /// a result whose session was signed out or replaced meanwhile (each session has a generation that both bump),
    /// stores the new set, and ends the session on a definitive `invalid_grant`. Whoever waits for it, and wherever,
    /// gets that one outcome.
    private func refreshTask(_ sessionId: String?) throws -> Task<TokenSet, any Error> {
        let key = Self.key(sessionId)
        guard let slot = slots[key], let current = slot.tokens else { throw LatchkeyError(.sessionExpired, "not signed in") }
        let generation = slot.generation
        if let inFlight = slot.refresh, inFlight.generation == generation { return inFlight.task }
        guard current.refreshToken != nil else {
            throw LatchkeyError(.sessionExpired, "the access token expired and there is no refresh token")
        }
        // High priority: every request of the app waits for this one, and it must not queue behind their tasks
        // (10,000 callers starting at once starved a refresh at the callers' priority).
        let task = Task(priority: .high) { try await self.runRefresh(current, sessionId: sessionId, key: key, generation: generation) }
        slots[key]?.refresh = (generation, task)
        publish(key)
        return task
    }

    private func runRefresh(_ current: TokenSet, sessionId: String?, key: String, generation: Int) async throws -> TokenSet {
        do {
            let (fresh, storedUnderLock) = try await performRefresh(current, key: key, generation: generation)
            guard slots[key]?.generation == generation else {
                throw LatchkeyError(.sessionExpired, "signed out while the token was being refreshed; the result was discarded")
            }
            slots[key]?.refresh = nil
            slots[key]?.tokens = fresh
            publish(key)
            changes?.publish(AuthStateChange(event: .tokenRefreshed, sessionId: sessionId, isSignedIn: true))
            // Shared storage was written under its lock already; writing again outside it could put back a set
            // that another process has rotated since. When that write failed (a locked device), the set stays in
            // memory, and is written later under the lock, over the set it replaced only.
            if storage is any SharedStorageAdapter {
                if slots[key]?.generation == generation, slots[key]?.tokens == fresh {
                    slots[key]?.unsaved = !storedUnderLock
                    slots[key]?.unsavedPredecessor = storedUnderLock ? nil : current.refreshToken
                    publish(key)
                }
            } else {
                // The old refresh token is spent: if the new set cannot be stored now (the device is locked), it
                // stays in memory and is written on the next access, rather than failing a refresh that worked.
                do {
                    try await storage.set(key, try StoredSession.encode(fresh))
                    if slots[key]?.generation == generation, slots[key]?.tokens == fresh, slots[key]?.unsaved == true {
                        slots[key]?.unsaved = false  // an earlier failed write is made good by this one
                        publish(key)
                    }
                } catch {
                    // Only if nothing replaced the set during the write: the flag belongs to these tokens.
                    if slots[key]?.generation == generation, slots[key]?.tokens == fresh {
                        slots[key]?.unsaved = true
                        publish(key)
                    }
                }
                // The write is a suspension point (a Keychain write can take a while): a sign-out during it has
                // emptied the slot and the cache, and the fresh set must not reach the waiters after all. A write
                // that landed after the sign-out's removal is taken back, unless someone has signed in since.
                guard slots[key]?.generation == generation else {
                    if slots[key]?.tokens == nil { try? await storage.remove(key) }
                    throw LatchkeyError(.sessionExpired, "signed out while the token was being refreshed; the result was discarded")
                }
            }
            return fresh
        } catch let error as LatchkeyError where error.code == .invalidGrant {
            if slots[key]?.generation == generation {
                // Definitive: the grant is gone. The only answer that ends a session here; timeouts, 5xx, 429 and
                // unreachable servers keep it for the next attempt.
                try await clear(sessionId, because: .sessionExpired, reason: SessionEndReason(refusal: error))
            }
            throw LatchkeyError(
                .sessionExpired, "the session has ended; sign in again (\(error.message))", statusCode: error.statusCode,
                serverCode: error.serverCode, underlying: error)
        } catch is SignedOutElsewhere {
            if slots[key]?.generation == generation { try await clear(sessionId) }
            throw LatchkeyError(.sessionExpired, "signed out in another process while the token was being refreshed")
        } catch {
            if slots[key]?.generation == generation {
                slots[key]?.refresh = nil
                publish(key)
            }
            throw error
        }
    }

    /// One refresh request. With storage that other processes share (the CLI's files), two processes holding the same
    /// refresh token must not both present it: the server would take the second as a replay and revoke the session.
    /// So, under the storage's lock, the stored set is read again; when another process has rotated it meanwhile, its
    /// result is adopted without a request, otherwise this one refreshes and stores the result before the lock is
    /// released.
    ///
    /// Returns the new set and whether it is in storage (a failed write under the lock does not fail a refresh that
    /// worked: the old refresh token is spent, so the new set must survive in memory).
    ///
    /// A stored set that still holds the refresh token an unsaved `current` replaced is older than ours, not another
    /// process's newer result: it is overwritten rather than adopted.
    private func performRefresh(_ current: TokenSet, key: String, generation: Int) async throws -> (TokenSet, stored: Bool) {
        guard let shared = storage as? any SharedStorageAdapter else { return (try await refresher(current), false) }
        let refresher = self.refresher
        let olderThanCurrent = slots[key]?.unsavedPredecessor
        return try await shared.withExclusiveAccess(to: key) {
            guard let data = try await shared.get(key) else {
                // Another process signed out meanwhile: refreshing would write the session back.
                throw SignedOutElsewhere()
            }
            // An item this process cannot read is not overwritten: its refresh token may be newer than ours, and
            // presenting ours would then be a replay that ends the session for every process.
            let stored = try StoredSession.decode(data)
            if stored.refreshToken != current.refreshToken, olderThanCurrent == nil || stored.refreshToken != olderThanCurrent {
                return (stored, true)
            }
            let fresh = try await refresher(current)
            do {
                try await self.store(fresh, key: key, ifGeneration: generation)
                return (fresh, true)
            } catch {
                return (fresh, false)
            }
        }
    }

    /// Writes a refresh result unless the session was signed out or replaced since the refresh began (actor-isolated,
    /// so it cannot interleave with `clear`/`replace`).
    private func store(_ tokens: TokenSet, key: String, ifGeneration generation: Int) async throws {
        guard slots[key]?.generation == generation else { return }
        try await storage.set(key, try StoredSession.encode(tokens))
    }

    /// The shared item was deleted by another process (a sign-out there) while this one was about to refresh.
    private struct SignedOutElsewhere: Error {}
}
