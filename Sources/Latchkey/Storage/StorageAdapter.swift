import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the SDK keeps token sets (one item per session, written atomically).
public protocol StorageAdapter: Sendable {
    func get(_ key: String) async throws -> Data?
    func set(_ key: String, _ value: Data) async throws
    func remove(_ key: String) async throws
}

/// Process memory only; nothing survives a restart.
public actor InMemoryStorageAdapter: StorageAdapter {
    private var items: [String: Data] = [:]
    public init() {}
    public func get(_ key: String) -> Data? { items[key] }
    public func set(_ key: String, _ value: Data) { items[key] = value }
    public func remove(_ key: String) { items[key] = nil }
}

/// Storage that other processes read and write too (files on disk): it can hold an item exclusively across
/// processes, so a read-modify-write of it (a token refresh) is not interleaved with another process's.
public protocol SharedStorageAdapter: StorageAdapter {
    /// Runs `body` while holding the cross-process lock of `key`.
    func withExclusiveAccess<T: Sendable>(to key: String, _ body: @Sendable () async throws -> T) async throws -> T
}

/// One file per key in a directory: created 0700, files 0600, written by atomic rename so a crash never leaves a
/// half-written token set. Items can be held exclusively across processes (`flock(2)` on a lock file per key), so two
/// `latchkey` commands refreshing at the same moment do not both present one refresh token.
public actor FileStorageAdapter: SharedStorageAdapter {
    /// How long to wait for another process's hold on an item before giving up.
    static let lockTimeout: Duration = .seconds(30)
    private let directory: URL

    public init(directory: URL) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    private func url(_ key: String) -> URL {
        let safe = key.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" ? String($0) : "_" }.joined()
        return directory.appendingPathComponent(safe + ".json")
    }

    public func get(_ key: String) throws -> Data? {
        let file = url(key)
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        return try Data(contentsOf: file)
    }

    public func set(_ key: String, _ value: Data) throws {
        let file = url(key)
        let temporary = directory.appendingPathComponent(".\(UUID().uuidString).tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: value, attributes: [.posixPermissions: 0o600]) else {
            throw LatchkeyError(.unknownError, "cannot write \(temporary.path)")
        }
        // rename(2) replaces the old file atomically. (Foundation's replaceItemAt fails on Linux when the target
        // exists, which broke a second sign-in on the same machine.)
        guard rename(temporary.path, file.path) == 0 else {
            let code = errno
            try? FileManager.default.removeItem(at: temporary)
            throw LatchkeyError(.unknownError, "cannot replace \(file.path) (errno \(code))")
        }
    }

    public func remove(_ key: String) throws {
        let file = url(key)
        if FileManager.default.fileExists(atPath: file.path) { try FileManager.default.removeItem(at: file) }
    }

    public func withExclusiveAccess<T: Sendable>(to key: String, _ body: @Sendable () async throws -> T) async throws -> T {
        let lockPath = url(key).deletingPathExtension().path + ".lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LatchkeyError(.unknownError, "cannot open \(lockPath) (errno \(errno))") }
        defer { _ = close(fd) }  // closing releases the lock
        // Non-blocking attempts with short sleeps: a blocking flock would hold a cooperative thread hostage.
        let deadline = ContinuousClock.now + Self.lockTimeout
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else {
                throw LatchkeyError(.unknownError, "another process holds \(lockPath) too long")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try await body()
    }
}
