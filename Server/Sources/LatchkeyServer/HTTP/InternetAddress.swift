import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which addresses the server's requests to URLs that applications registered may reach: none of the server's own
/// network. An address is internal when it is unspecified, loopback, private (RFC 1918), shared (CGNAT, RFC 6598),
/// link-local (RFC 3927: the cloud metadata service at 169.254.169.254), IETF-reserved or benchmarking, multicast or
/// broadcast (IPv4); or, in IPv6, unspecified, loopback, unique-local (RFC 4193), link-local or site-local, multicast,
/// or an IPv4-compatible address (deprecated, RFC 4291 §2.5.5.1); and an IPv6 address that carries an IPv4 address
/// (IPv4-mapped, NAT64's well-known prefix, 6to4) is internal when that IPv4 address is.
///
/// Literals are read as the C library reads them (`inet_aton`: `2130706433`, `127.1`, `0x7f000001`,
/// `017700000001`; `inet_pton` for IPv6), because that is how a resolver or URL loader may read them: a check of the
/// dotted-decimal spelling alone lets the other spellings through (review 3, R3-5).
enum InternetAddress {
    /// The address bytes (4 or 16, network order) of a host that is an address literal, in any spelling `inet_aton` or
    /// `inet_pton` takes, with or without IPv6 brackets and one trailing dot; nil for a name.
    static func literal(_ host: String) -> [UInt8]? {
        var text = host
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if text.contains(":") {
            // A zone (`fe80::1%eth0`) only names the interface.
            let address = String(text.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            var storage = in6_addr()
            guard inet_pton(AF_INET6, address, &storage) == 1 else { return nil }
            return withUnsafeBytes(of: storage) { Array($0) }
        }
        if text.hasSuffix(".") { text.removeLast() }
        // Only what inet_aton's forms are made of: glibc's inet_aton also takes "1.2.3.4 anything", which no host is.
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "x") || $0 == UInt8(ascii: "X") || isHexDigit($0) })
        else { return nil }
        var storage = in_addr()
        guard inet_aton(text, &storage) != 0 else { return nil }
        return withUnsafeBytes(of: storage) { Array($0) }
    }

    /// Whether a URL's host is internal without resolving it: `localhost` and its subdomains (RFC 6761 §6.3, which
    /// resolvers answer with loopback), or an internal address literal in any spelling.
    static func isInternal(host: String) -> Bool {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        return literal(host).map(isInternal) ?? false
    }

    /// Whether a resolved address is internal. A Unix domain socket is never a destination.
    static func isInternal(_ address: SocketAddress) -> Bool {
        switch address {
        case .v4(let v4):
            return isInternal(withUnsafeBytes(of: v4.address.sin_addr) { Array($0) })
        case .v6(let v6):
            return isInternal(withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) })
        case .unixDomainSocket:
            return true
        }
    }

    /// `bytes`: 4 (IPv4) or 16 (IPv6) bytes in network order; anything else is internal (never a destination).
    static func isInternal(_ bytes: [UInt8]) -> Bool {
        switch bytes.count {
        case 4: return isInternalV4(bytes[0], bytes[1], bytes[2])
        case 16: return isInternalV6(bytes)
        default: return true
        }
    }

    private static func isInternalV4(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> Bool {
        switch (a, b) {
        case (0, _), (10, _), (127, _): return true  // "this network", private, loopback
        case (100, 64...127): return true  // shared address space (CGNAT)
        case (169, 254): return true  // link-local, the cloud metadata service
        case (172, 16...31), (192, 168): return true  // private
        case (192, 0): return c == 0  // IETF protocol assignments
        case (198, 18...19): return true  // benchmarking
        case (224...255, _): return true  // multicast, reserved, broadcast
        default: return false
        }
    }

    private static func isInternalV6(_ b: [UInt8]) -> Bool {
        let zeroPrefix = b[0..<10].allSatisfy { $0 == 0 }
        if zeroPrefix, b[10] == 0xff, b[11] == 0xff { return isInternalV4(b[12], b[13], b[14]) }  // ::ffff:a.b.c.d (mapped)
        if zeroPrefix, b[10] == 0, b[11] == 0 { return true }  // ::, ::1 and ::a.b.c.d (IPv4-compatible, deprecated)
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xff, b[3] == 0x9b {
            // NAT64: the well-known prefix 64:ff9b::/96 reaches the IPv4 address it carries; 64:ff9b:1::/48 is local.
            return b[4..<12].allSatisfy { $0 == 0 } ? isInternalV4(b[12], b[13], b[14]) : true
        }
        if b[0] == 0x20, b[1] == 0x02 { return isInternalV4(b[2], b[3], b[4]) }  // 6to4 carries an IPv4 address
        if b[0] & 0xfe == 0xfc { return true }  // unique-local fc00::/7
        if b[0] == 0xfe, b[1] & 0xc0 == 0x80 || b[1] & 0xc0 == 0xc0 { return true }  // link-local fe80::/10, site-local fec0::/10
        if b[0] == 0xff { return true }  // multicast
        return false
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }
}
