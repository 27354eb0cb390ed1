import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as bytes (4 or 16), parsed strictly with `inet_pton`.
struct IPAddress: Equatable, Sendable {
    let bytes: [UInt8]

    /// Parses `192.0.2.1`, `2001:db8::1`, `[2001:db8::1]`, `[2001:db8::1]:443`, `192.0.2.1:8080` (a port is dropped);
    /// nil for anything else. An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) is its IPv4 address, so one client
    /// has one key whichever socket family it arrived on.
    init?(_ text: String) {
        var s = text.trimmingCharacters(in: .whitespaces)
        if s.hasPrefix("["), let close = s.firstIndex(of: "]") {
            s = String(s[s.index(after: s.startIndex)..<close])
        } else if s.filter({ $0 == ":" }).count == 1, let colon = s.firstIndex(of: ":") {
            s = String(s[..<colon])  // IPv4 with a port
        }
        if let zone = s.firstIndex(of: "%") { s = String(s[..<zone]) }
        var v4 = in_addr()
        if inet_pton(AF_INET, s, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, s, &v6) == 1 else { return nil }
        let raw = withUnsafeBytes(of: &v6) { Array($0) }
        if raw[0..<10].allSatisfy({ $0 == 0 }) && raw[10] == 0xff && raw[11] == 0xff {
            bytes = Array(raw[12..<16])
        } else {
            bytes = raw
        }
    }

    var isIPv4: Bool { bytes.count == 4 }

    /// Whether the first `bits` bits equal those of `network` (same family only).
    func matches(_ network: IPAddress, prefix bits: Int) -> Bool {
        guard bytes.count == network.bytes.count else { return false }
        var remaining = bits
        for (a, b) in zip(bytes, network.bytes) where remaining > 0 {
            let take = min(8, remaining)
            let mask: UInt8 = take == 8 ? 0xff : ~(0xff >> UInt8(take))
            if a & mask != b & mask { return false }
            remaining -= take
        }
        return true
    }

    /// The key of throttles: an IPv4 address as is; an IPv6 address by its /64 prefix, because one subscriber
    /// usually holds a whole /64 and could otherwise rotate through 2^64 addresses to evade every per-address limit.
    var throttleKey: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        let hextets = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return hextets.joined(separator: ":") + "::/64"
    }
}

enum ClientAddress {
    /// The throttle key of an address text (see `IPAddress.throttleKey`); text that is not an IP address is its own key.
    static func throttleKey(_ address: String) -> String {
        IPAddress(address)?.throttleKey ?? address
    }
}

/// The proxies whose forwarding headers are believed (`trusted_proxies`: addresses or CIDR blocks).
///
/// Behind a reverse proxy every connection comes from the proxy, so per-address limits would put all clients in one
/// bucket. The client address is then read from the forwarding header, but only when the socket peer is a trusted
/// proxy, and walking from the right: each entry was appended by the hop to its right, so entries are believed only
/// while that hop is itself trusted. The first untrusted entry is the client; everything left of it is whatever the
/// client chose to send and is ignored.
public struct TrustedProxies: Sendable, Equatable {
    /// Which header the proxies write. Only one is read: a proxy that writes one passes the other through from the
    /// client unchanged, so reading both would let a client choose its own address.
    public enum Header: String, Sendable, Equatable, CaseIterable {
        case xForwardedFor = "x-forwarded-for"
        case forwarded
    }

    struct Network: Equatable, Sendable {
        let address: IPAddress
        let prefix: Int
    }

    let networks: [Network]
    public let header: Header

    /// No proxy is trusted: the socket peer is the client (the default).
    public static let noneTrusted = TrustedProxies(networks: [], header: .xForwardedFor)

    private init(networks: [Network], header: Header) {
        self.networks = networks
        self.header = header
    }

    /// Parses `["127.0.0.1", "10.0.0.0/8", "::1", "fd00::/8"]`; a bad entry is a configuration error.
    public init(_ entries: [String], header: Header = .xForwardedFor) throws {
        var networks: [Network] = []
        for entry in entries {
            let parts = entry.split(separator: "/", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), let address = IPAddress(String(parts[0])), !parts[0].contains("[") else {
                throw ConfigurationError.invalid("trusted_proxies: \(entry) is not an IP address or CIDR block")
            }
            let maxBits = address.bytes.count * 8
            let prefix = parts.count == 2 ? Int(parts[1]) : maxBits
            guard let prefix, (0...maxBits).contains(prefix) else {
                throw ConfigurationError.invalid("trusted_proxies: \(entry) has an invalid prefix length")
            }
            networks.append(Network(address: address, prefix: prefix))
        }
        self.init(networks: networks, header: header)
    }

    var isEmpty: Bool { networks.isEmpty }

    func trusts(_ address: IPAddress) -> Bool {
        networks.contains { address.matches($0.address, prefix: $0.prefix) }
    }

    /// The client address for a request from `peer` carrying `headerValues` (every occurrence of the configured
    /// header, in order). Untrusted peers: the peer itself.
    func clientAddress(peer: String, headerValues: [String]) -> String {
        guard !isEmpty, var current = IPAddress(peer), trusts(current) else { return peer }
        var currentText = peer
        let hops = headerValues.flatMap { header == .forwarded ? Self.forwardedFor($0) : Self.list($0) }
        for hop in hops.reversed() {
            // An entry that is not an address (`unknown`, an obfuscated `_node`): the hop that wrote it is trusted but
            // names no client; stop at that hop rather than let the text become a key a client could vary.
            guard let address = IPAddress(hop) else { return currentText }
            current = address
            currentText = hop.trimmingCharacters(in: .whitespaces)
            if !trusts(current) { return currentText }
        }
        return currentText
    }

    private static func list(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The `for=` parameters of an RFC 7239 `Forwarded` value, in order (quotes removed).
    static func forwardedFor(_ value: String) -> [String] {
        value.split(separator: ",").compactMap { element in
            for pair in element.split(separator: ";") {
                let kv = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard kv.count == 2, kv[0].lowercased() == "for" else { continue }
                return kv[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
            return "unknown"  // an element without `for=` still stands for one hop
        }
    }
}
