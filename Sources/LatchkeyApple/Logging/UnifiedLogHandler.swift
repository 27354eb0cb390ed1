import Foundation
import Logging

#if canImport(os)
import os

/// A swift-log handler that writes to Apple's unified log, where Xcode's console and Console.app show it, filtered by
/// subsystem and category. Messages are logged `.public`: the SDK's messages never hold a token, code or password
/// (its HTTP lines carry method, path, status and time only), and a private message would read `<private>` outside
/// the debugger, where a developer needs it.
struct UnifiedLogHandler: LogHandler {
    // Names, not an `os.Logger`: that type is not `Sendable` in SDKs before iOS 18, and a handler must be. Making one
    // per line is cheap (the system caches the log object by subsystem and category).
    private let subsystem: String
    private let category: String
    var metadata: Logging.Logger.Metadata = [:]
    var metadataProvider: Logging.Logger.MetadataProvider?
    var logLevel: Logging.Logger.Level = .info

    init(subsystem: String, category: String) {
        self.subsystem = subsystem
        self.category = category
    }

    subscript(metadataKey key: String) -> Logging.Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let suffix = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let text = "\(event.message)\(suffix)"
        os.Logger(subsystem: subsystem, category: category).log(level: Self.type(of: event.level), "\(text, privacy: .public)")
    }

    /// swift-log's seven levels on the unified log's five: debug and info are kept in memory only; notice and
    /// warning are the default level, persisted; error and critical are errors and faults.
    static func type(of level: Logging.Logger.Level) -> OSLogType {
        switch level {
        case .trace, .debug: .debug
        case .info: .info
        case .notice, .warning: .default
        case .error: .error
        case .critical: .fault
        }
    }
}
#endif

extension Logging.Logger {
    /// The SDK's default logger. On Apple platforms it writes to the unified log (subsystem `io.latchkey`, category
    /// `sdk`), so what the SDK reports shows in Xcode's console whatever the app did with swift-log; elsewhere it is
    /// `Logger(label: "latchkey")` with the handler the process bootstrapped. An app that routes swift-log itself
    /// passes its own logger instead (`LatchkeyClient(prefersEphemeralWebBrowserSession: false, logger:)`,
    /// `.latchkeyProvider(config:logger:)`).
    public static var latchkey: Logging.Logger {
        #if canImport(os)
        Logging.Logger(label: "io.latchkey.sdk") { _ in UnifiedLogHandler(subsystem: "io.latchkey", category: "sdk") }
        #else
        Logging.Logger(label: "latchkey")
        #endif
    }
}
