import Foundation
import Latchkey

/// The tests' one HTTP client double, given to the SDK in place of its `HTTPClient`.
///
/// - It passes every request it has no script for to `upstream` (by default the SDK's real client, so over loopback
///   HTTP to a test server); without an upstream it answers those 404, as a provider without the route would.
/// - `answer` scripts the answer to the requests a method and path, or a closure, pick (the latest script that matches
///   answers; `times` lets one answer only so often); `rewriteRequests` changes requests on their way out (one sent to
///   a closed port fails as the platform fails) and `rewriteResponses` answers on their way back (a `Date` header, a
///   member of a document). Each returns a `Rule` that `remove` takes off again.
/// - It records every request it saw (`sent`, `requests`) and every answer it gave (`exchanges`, in the order given).
/// - `hold` makes the matching requests wait, before they are sent or after they were answered, until `release()`;
///   `heldCount` says how many wait. Nothing in it waits for time.
package final class ProgrammableHTTPClient: HTTPClient, @unchecked Sendable {
    package typealias Match = @Sendable (HTTPRequest) -> Bool
    package typealias Answer = @Sendable (HTTPRequest) async throws -> HTTPResponse

    /// A script installed on the double.
    package struct Rule: Hashable, Sendable {
        fileprivate let id: Int
    }

    /// Where a held request waits.
    package enum HoldPoint: Sendable {
        /// Before it is sent: the server has not seen it yet.
        case beforeSending
        /// After it was answered: the server acted on it, the answer reaches the caller late.
        case afterAnswer
    }

    /// A request as the caller sent it, and when.
    package struct Sent: Sendable {
        package let request: HTTPRequest
        package let date: Date
    }

    /// A request as the caller sent it, and the answer the caller got.
    package struct Exchange: Sendable {
        package let request: HTTPRequest
        package let response: HTTPResponse
    }

    private enum Kind {
        case answer(Answer, remaining: Int?)
        case rewriteRequest(@Sendable (HTTPRequest) -> HTTPRequest)
        case rewriteResponse(@Sendable (HTTPRequest, HTTPResponse) throws -> HTTPResponse)
    }

    private struct Script {
        let id: Int
        let match: Match
        var kind: Kind
    }

    private struct Hold {
        let id: Int
        let point: HoldPoint
        let match: Match
    }

    private struct State {
        var nextId = 0
        var scripts: [Script] = []
        var sent: [Sent] = []
        var exchanges: [Exchange] = []
        var hold: Hold?
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let upstream: (any HTTPClient)?
    private let lock = NSLock()
    private var state = State()

    /// `upstream` answers what no script does; `nil` makes the double scripted only.
    /// - Parameters:
    ///   - upstream: where unscripted requests go.
    ///   - now: the time each request is recorded at (a test that drives the SDK's clock passes the same one).
    package init(upstream: (any HTTPClient)? = URLSessionHTTPClient(), now: @escaping @Sendable () -> Date = { Date() }) {
        self.upstream = upstream
        self.now = now
    }

    private let now: @Sendable () -> Date

    /// The answer to an unscripted request when there is no upstream.
    package static let noRoute = HTTPResponse(
        status: 404, headers: ["Content-Type": "application/json"], body: Data(#"{"error":"not_found","error_description":"no route"}"#.utf8))

    private func locked<T>(_ body: (inout State) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    private func install(_ match: @escaping Match, _ kind: Kind) -> Rule {
        locked { state in
            state.nextId += 1
            state.scripts.append(Script(id: state.nextId, match: match, kind: kind))
            return Rule(id: state.nextId)
        }
    }

    // MARK: Scripts

    /// Answers the requests `match` picks with `answer` (at most `times` of them when given) instead of the upstream.
    @discardableResult
    package func answer(where match: @escaping Match, times: Int? = nil, with answer: @escaping Answer) -> Rule {
        install(match, .answer(answer, remaining: times))
    }

    /// Answers the requests to `path` (with `method`, when given) with `answer`.
    @discardableResult
    package func answer(_ method: String? = nil, path: String, times: Int? = nil, with answer: @escaping Answer) -> Rule {
        self.answer(where: { request in request.url.path == path && (method == nil || request.method == method) }, times: times, with: answer)
    }

    /// Changes the requests `match` picks before they are answered (the records keep them as the caller sent them).
    @discardableResult
    package func rewriteRequests(where match: @escaping Match = { _ in true }, _ rewrite: @escaping @Sendable (HTTPRequest) -> HTTPRequest) -> Rule {
        install(match, .rewriteRequest(rewrite))
    }

    /// Changes the answers to the requests `match` picks before the caller gets them (and before they are recorded).
    @discardableResult
    package func rewriteResponses(
        where match: @escaping Match = { _ in true }, _ rewrite: @escaping @Sendable (HTTPRequest, HTTPResponse) throws -> HTTPResponse
    ) -> Rule {
        install(match, .rewriteResponse(rewrite))
    }

    /// Takes a script off (one used up already is gone).
    package func remove(_ rule: Rule) { locked { $0.scripts.removeAll { $0.id == rule.id } } }

    // MARK: Holding

    /// From now on the requests `match` picks wait at `point` until `release()`.
    package func hold(_ point: HoldPoint = .beforeSending, where match: @escaping Match = { _ in true }) {
        locked { state in
            state.nextId += 1
            state.hold = Hold(id: state.nextId, point: point, match: match)
        }
    }

    /// Lets every waiting request go on, and holds no more.
    package func release() {
        let waiting = locked { state in
            defer { state.hold = nil; state.waiting = [] }
            return state.waiting
        }
        waiting.forEach { $0.resume() }
    }

    /// How many requests wait for `release()`.
    package var heldCount: Int { locked { $0.waiting.count } }

    // MARK: Records

    /// Every request the double saw, as the caller sent it, in order of arrival.
    package var sent: [Sent] { locked { $0.sent } }
    package var requests: [HTTPRequest] { sent.map(\.request) }
    package func requests(pathEndingWith suffix: String) -> [HTTPRequest] { requests.filter { $0.url.path.hasSuffix(suffix) } }

    /// Every answer the caller got (failures have none), in the order they were given.
    package var exchanges: [Exchange] { locked { $0.exchanges } }
    /// The statuses of the answers to the requests whose path ends with `suffix`, in the order they were given.
    package func statuses(pathEndingWith suffix: String) -> [Int] {
        exchanges.filter { $0.request.url.path.hasSuffix(suffix) }.map(\.response.status)
    }

    /// Forgets the requests and answers recorded so far.
    package func forgetRecords() {
        locked { state in
            state.sent = []
            state.exchanges = []
        }
    }

    // MARK: HTTPClient

    package func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let date = now()
        locked { $0.sent.append(Sent(request: request, date: date)) }
        await wait(at: .beforeSending, request)
        // Scripts run outside the lock: one may read the double's records.
        let scripts = locked { $0.scripts }
        var outgoing = request
        for script in scripts {
            if case .rewriteRequest(let rewrite) = script.kind, script.match(outgoing) { outgoing = rewrite(outgoing) }
        }
        var response: HTTPResponse
        if let answer = claimAnswer(for: outgoing, among: scripts) {
            response = try await answer(outgoing)
        } else if let upstream {
            response = try await upstream.send(outgoing)
        } else {
            response = Self.noRoute
        }
        for script in scripts {
            if case .rewriteResponse(let rewrite) = script.kind, script.match(outgoing) { response = try rewrite(outgoing, response) }
        }
        locked { [response] in $0.exchanges.append(Exchange(request: request, response: response)) }
        await wait(at: .afterAnswer, request)
        return response
    }

    /// The latest matching answer with uses left, one use taken.
    private func claimAnswer(for request: HTTPRequest, among scripts: [Script]) -> Answer? {
        for candidate in scripts.reversed() {
            guard case .answer(let answer, _) = candidate.kind, candidate.match(request) else { continue }
            let claimed = locked { state -> Bool in
                guard let index = state.scripts.firstIndex(where: { $0.id == candidate.id }),
                    case .answer(let current, let remaining) = state.scripts[index].kind
                else { return false }  // used up meanwhile by another request
                guard let remaining else { return true }
                if remaining <= 1 {
                    state.scripts.remove(at: index)
                } else {
                    state.scripts[index].kind = .answer(current, remaining: remaining - 1)
                }
                return true
            }
            if claimed { return answer }
        }
        return nil
    }

    private func wait(at point: HoldPoint, _ request: HTTPRequest) async {
        guard let hold = locked({ $0.hold }), hold.point == point, hold.match(request) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waits = locked { state -> Bool in
                guard state.hold?.id == hold.id else { return false }  // released meanwhile
                state.waiting.append(continuation)
                return true
            }
            if !waits { continuation.resume() }
        }
    }
}

extension HTTPRequest {
    /// The same request to a loopback port nothing listens on (9, discard): sent, it fails as the platform fails when
    /// the server is gone ("connection refused").
    package var toClosedPort: HTTPRequest {
        var request = self
        if var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            components.host = "127.0.0.1"
            components.port = 9
            request.url = components.url ?? url
        }
        return request
    }
}
