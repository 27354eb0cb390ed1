import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns a host name into the addresses the server connects to, for its requests to URLs applications registered
/// (`OutboundHTTPClient`). The server resolves once, checks every address, and connects to one it checked, so what it
/// checked is what it reaches: a second lookup (inside a URL loader) could be answered differently (DNS rebinding).
/// Tests give the server a resolver of their own (`ServerConfiguration.hostResolver`) that answers names they choose.
public protocol HostResolver: Sendable {
    /// The addresses of `host` (a name, or an address literal) for a TCP connection to `port`; empty or a thrown
    /// error when there are none.
    func addresses(of host: String, port: Int) async throws -> [SocketAddress]
}

/// The system's resolver (`getaddrinfo`: the hosts file, then DNS), on threads of its own.
///
/// Not NIO's shared blocking-work pool, which hashes passwords and client secrets: a registrant controls the names
/// looked up (a `request_uris` host is resolved at every authorization request naming it), and a lookup that DNS
/// answers slowly holds its thread until the system resolver gives up, whatever the caller's deadline. So lookups have
/// `threads` threads, and past `maxInFlight` at once a lookup fails at once rather than queueing behind the others.
struct SystemHostResolver: HostResolver {
    struct Failure: Error, CustomStringConvertible {
        let code: Int32
        var description: String { "getaddrinfo failed (\(String(cString: gai_strerror(code))))" }
    }

    struct Busy: Error, CustomStringConvertible {
        var description: String { "too many host lookups in flight (\(SystemHostResolver.maxInFlight))" }
    }

    static let threads = 4
    static let maxInFlight = 32
    private static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
        return pool
    }()
    private static let inFlight = NIOLockedValueBox(0)

    func addresses(of host: String, port: Int) async throws -> [SocketAddress] {
        let admitted = Self.inFlight.withLockedValue { count in
            guard count < Self.maxInFlight else { return false }
            count += 1
            return true
        }
        guard admitted else { throw Busy() }
        defer { Self.inFlight.withLockedValue { $0 -= 1 } }
        return try await Self.pool.runIfActive { try Self.lookUp(host, port: port) }
    }

    private static func lookUp(_ host: String, port: Int) throws -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        hints.ai_protocol = Int32(IPPROTO_TCP)
        var list: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, String(port), &hints, &list)
        guard code == 0 else { throw Failure(code: code) }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry = list
        while let info = entry?.pointee {
            if let raw = info.ai_addr {
                switch info.ai_family {
                case AF_INET:
                    raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { addresses.append(SocketAddress($0.pointee, host: host)) }
                case AF_INET6:
                    raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { addresses.append(SocketAddress($0.pointee, host: host)) }
                default:
                    break
                }
            }
            entry = info.ai_next
        }
        return addresses
    }
}
