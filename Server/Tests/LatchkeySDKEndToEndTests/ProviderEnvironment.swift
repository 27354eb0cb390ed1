import Foundation

/// The `KEY=value` lines a third-party provider's start script writes (`Tests/glewlwyd/start.sh`, `Tests/dot/start.sh`),
/// read from the file the environment variable `variable` names; empty when it is unset or unreadable.
enum ProviderEnvironment {
    static func load(_ variable: String) -> [String: String] {
        guard let path = ProcessInfo.processInfo.environment[variable],
            let text = try? String(contentsOfFile: path, encoding: .utf8)
        else { return [:] }
        return Dictionary(
            text.split(separator: "\n").compactMap { line -> (String, String)? in
                let parts = line.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            }, uniquingKeysWith: { _, b in b })
    }
}
