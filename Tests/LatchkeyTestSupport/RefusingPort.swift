#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback TCP port that refuses every connection, for as long as this value is kept: a socket bound to it that
/// never listens. The kernel answers a connect with a reset ("connection refused"), and no other listener can be given
/// the port meanwhile.
///
/// Why not the port of a server that was stopped: the suites run hundreds of servers at once, each on a port the kernel
/// picks, and a freed port was handed to another test's server, whose 404 turned "unreachable" into "answered" (an
/// audit webhook test on a loaded PostgreSQL pass).
package final class RefusingPort: Sendable {
    package let port: Int
    private let descriptor: Int32

    package init() throws {
        #if canImport(Glibc)
        let stream = Int32(SOCK_STREAM.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        let fd = socket(AF_INET, stream, 0)
        guard fd >= 0 else { throw Failure(step: "socket", code: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw Failure(step: "bind", code: code)
        }
        var chosen = sockaddr_in()
        var chosenLength = length
        let named = withUnsafeMutablePointer(to: &chosen) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &chosenLength) }
        }
        guard named == 0 else {
            let code = errno
            close(fd)
            throw Failure(step: "getsockname", code: code)
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: chosen.sin_port))
    }

    deinit { close(descriptor) }

    /// `http://127.0.0.1:PORT`.
    package var base: String { "http://127.0.0.1:\(port)" }

    package struct Failure: Error, CustomStringConvertible {
        let step: String
        let code: Int32
        package var description: String { "RefusingPort: \(step) failed (errno \(code))" }
    }
}
