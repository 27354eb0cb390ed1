import Foundation

/// Decides whether a requested redirect URI is registered for a client.
///
/// Exact string comparison (RFC 6749 §3.1.2.3, OAuth 2.1 §2.3.1), with one exception from RFC 8252 §7.3: a
/// registered loopback http URI *without a port* matches the same URI on any port, because native apps bind an
/// ephemeral port at run time.
enum RedirectURIMatcher {
    static func isRegistered(_ requested: String, in registered: [String]) -> Bool {
        if registered.contains(requested) { return true }
        guard let req = URLComponents(string: requested), req.scheme == "http", let host = req.host,
            LoopbackHost.isLoopback(host), req.port != nil, req.user == nil, req.password == nil, req.fragment == nil
        else { return false }
        return registered.contains { entry in
            guard let reg = URLComponents(string: entry), reg.scheme == "http", reg.port == nil,
                let regHost = reg.host, LoopbackHost.isLoopback(regHost)
            else { return false }
            return normalizedHost(regHost) == normalizedHost(host) && reg.percentEncodedPath == req.percentEncodedPath
                && reg.percentEncodedQuery == req.percentEncodedQuery
        }
    }

    private static func normalizedHost(_ host: String) -> String {
        host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
    }
}
