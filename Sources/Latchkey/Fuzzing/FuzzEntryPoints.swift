import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Entry points for the `latchkey-fuzz` harness (Tests/fuzz/README.md) into SDK code that is not public. They exist
/// only for fuzzing; `@_spi(Fuzzing)` keeps them out of the SDK's API (the harness lives in the server's package). Everything else the harness
/// fuzzes in the SDK (redirect callbacks, flow answers, ID tokens) goes through the public API.
@_spi(Fuzzing) public enum LatchkeyFuzzEntryPoints {
    /// A request as it reaches the loopback redirect listener (RFC 8252 §7.3): the bytes are read from a socket by the
    /// listener's own request-line reader, the target is made a URL the way the listener makes it, and the listener's
    /// callback test is applied. Returns the URL the user agent would hand back to the SDK (nil when it would answer 404).
    public static func loopbackCallback(_ request: Data, port: Int, expectedState: String) -> URL? {
        var fds: [Int32] = [-1, -1]
        #if os(Linux)
        let created = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
        #else
        let created = socketpair(AF_UNIX, SOCK_STREAM, 0, &fds)
        #endif
        guard created == 0 else { return nil }
        defer { _ = close(fds[0]); _ = close(fds[1]) }
        // The socket buffer holds far more than the listener reads (16 KiB); more input would only block here.
        let bytes = [UInt8](request.prefix(64 * 1024))
        #if os(Linux)
        let flags = Int32(MSG_NOSIGNAL)
        #else
        let flags: Int32 = 0
        #endif
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fds[0], $0.baseAddress! + sent, bytes.count - sent, flags) }
            if n <= 0 { break }
            sent += n
        }
        _ = shutdown(fds[0], Int32(SHUT_WR))
        // As in `LoopbackListener.waitForCallback`.
        guard let target = LoopbackListener.readRequestTarget(fds[1]),
            let url = URL(string: "http://127.0.0.1:\(port)\(target)")
        else { return nil }
        return LoopbackListener.isCallback(url, expectedState: expectedState) ? url : nil
    }
}
