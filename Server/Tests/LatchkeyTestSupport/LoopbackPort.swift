#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback TCP port held for as long as this value is kept, that no other listener can be given meanwhile:
/// - `refusing()`: a socket bound to it that never listens. The kernel answers a connect with a reset ("connection
///   refused").
/// - `silent()`: a socket that listens and never accepts. The kernel completes the handshake and queues the
///   connection; a request sent there stays unanswered.
///
/// Why not the port of a server that was stopped: the suites run hundreds of servers at once, each on a port the kernel
/// picks, and a freed port was handed to another test's server, whose 404 turned "unreachable" into "answered" (an
/// audit webhook test on a loaded PostgreSQL pass).
package final class LoopbackPort: Sendable {
    package let port: Int
    private let descriptor: Int32

    private init(listening: Bool) throws {
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
        func failure(_ step: String) -> Failure {
            let code = errno
            close(fd)
            return Failure(step: step, code: code)
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw failure("bind") }
        if listening, listen(fd, 16) != 0 { throw failure("listen") }
        var chosen = sockaddr_in()
        var chosenLength = length
        let named = withUnsafeMutablePointer(to: &chosen) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &chosenLength) }
        }
        guard named == 0 else { throw failure("getsockname") }
        descriptor = fd
        port = Int(UInt16(bigEndian: chosen.sin_port))
    }

    /// A port that refuses every connection.
    package static func refusing() throws -> LoopbackPort { try LoopbackPort(listening: false) }

    /// A port that takes connections and never answers.
    package static func silent() throws -> LoopbackPort { try LoopbackPort(listening: true) }

    deinit { close(descriptor) }

    /// `http://127.0.0.1:PORT`.
    package var base: String { "http://127.0.0.1:\(port)" }

    package struct Failure: Error, CustomStringConvertible {
        let step: String
        let code: Int32
        package var description: String { "loopback port: \(step) failed (errno \(code))" }
    }
}
