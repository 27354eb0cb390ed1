import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A GET to a loopback listener with a deadline that a machine ten times slower still meets (docs/testing.md, "a suite
/// that passes on a busy machine"). URLSession's default is 60 s, and on two busy cores the suite's first minute —
/// every suite starting its servers at once — can keep the task that starts a listener from running for longer: the
/// request then waits in the socket's backlog, and is answered once the task runs.
func patientGET(_ url: URL) async throws -> (Data, URLResponse) {
    var request = URLRequest(url: url)
    request.timeoutInterval = 600
    return try await URLSession.shared.data(for: request)
}
