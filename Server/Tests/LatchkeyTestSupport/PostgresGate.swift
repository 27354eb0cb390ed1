/// At most `limit` holders at once, the others waiting in order: how the suites keep the one PostgreSQL cluster they
/// share from being asked for hundreds of databases and connections in the same second (Swift Testing starts every
/// test of the run at once).
package actor PostgresGate {
    /// Store contract tests on PostgreSQL, held for the whole test (each store pools up to 10 connections).
    package static let shared = PostgresGate(limit: 4)
    /// Test servers on PostgreSQL, held from their database's creation until the server is open (the migrations run):
    /// a start-up storm of a few hundred servers made connects wait past the production deadline, a saturated cluster
    /// that is not what those tests test. Requests after the start keep the production deadline.
    package static let serverStarts = PostgresGate(limit: 6)

    private var available: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    package init(limit: Int) { available = limit }

    package func acquire() async {
        if available > 0 {
            available -= 1
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            waiting.append(continuation)
        }
    }

    package func release() {
        if waiting.isEmpty {
            available += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
