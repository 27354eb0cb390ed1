import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE

/// The provider's time, as this device can know it: the device's clock corrected by the offset the provider's `Date`
/// headers show (RFC 9110 §6.6.1: every origin server with a clock sends one).
///
/// A phone whose clock is minutes off is common (set by hand, a dead battery, a network that never set it). What
/// the SDK compares with the provider's own timestamps goes by this clock: an ID token's `iat`, `exp`, `nbf` and
/// `auth_time`, and the `iat` of a DPoP proof. A token's lifetime needs no correction: it is stored as the device's
/// time of receipt plus `expires_in`, and compared with the same device clock.
final class ProviderClock: Sendable {
    /// Offsets larger than this are not believed (a `Date` header from something that is not the provider's server,
    /// a proxy with a broken clock): the device's clock is used uncorrected, and the ID token checks decide.
    static let largestOffset: TimeInterval = 24 * 3600

    /// The device's clock (the client's `LatchkeyClock`): token lifetimes, device-poll waits, pending sign-ins.
    let device: LatchkeyClock
    private let learned = Locked<TimeInterval>(0)

    /// - Parameter device: the device's clock (tests pass a skewed or a manual one).
    init(device: LatchkeyClock = .system) { self.device = device }

    /// The device's time.
    var deviceNow: Date { device.now() }

    /// The provider's time: the device's, corrected by the last offset learned.
    var now: Date { device.now().addingTimeInterval(learned.withLock { $0 }) }

    /// Seconds the provider's clock is ahead of the device's (negative: behind), as last learned.
    var offset: TimeInterval { learned.withLock { $0 } }

    /// Learns the offset from a response's `Date` header, given when the request was sent and its answer came (device
    /// time). The header has whole seconds and the answer was dated somewhere between the two: the middle is taken,
    /// half a second later (the header's fraction was cut off). Offsets under two seconds are treated as none, so a
    /// device in step with its provider is never moved by rounding.
    func learn(from response: HTTPResponse, sent: Date, received: Date) {
        guard let header = response.header("Date"), let date = Self.httpDate(header) else { return }
        let middle = sent.timeIntervalSince1970 + received.timeIntervalSince(sent) / 2
        var offset = date.timeIntervalSince1970 + 0.5 - middle
        if abs(offset) < 2 { offset = 0 }
        guard abs(offset) <= Self.largestOffset else { return }
        learned.withLock { $0 = offset }
    }

    /// An HTTP date (RFC 9110 §5.6.7) in the IMF-fixdate form every current server sends, e.g.
    /// `Sun, 06 Nov 1994 08:49:37 GMT`; nil for anything else (the two obsolete forms included). Read by hand rather
    /// than with `DateFormatter`: it runs on every answer, and a formatter is neither cheap to make nor safe to share
    /// across threads everywhere Foundation runs.
    static func httpDate(_ text: String) -> Date? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), parts[5] == "GMT",
            let day = Int(parts[1]), parts[1].count == 2, (1...31).contains(day),
            let month = months.firstIndex(of: String(parts[2])).map({ $0 + 1 }),
            let year = Int(parts[3]), parts[3].count == 4
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }),
            let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
            hour < 24, minute < 60, second < 61
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3_600 + minute * 60 + second))
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

/// Sends through `base` and teaches `clock` the provider's time from its answers: successful ones from the issuer's
/// origin, fresh from its server. Not from other origins (the app's own APIs go through the client too, and their clocks
/// are theirs), not from error pages (a proxy may answer those), and not from answers with an `Age` header (a cache
/// that kept the origin's `Date` would set the clock back by the cached answer's age).
struct ClockLearningHTTPClient: HTTPClient {
    let base: any HTTPClient
    let clock: ProviderClock
    /// The issuer's origin (`OAuthClient.origin(of:)`).
    let origin: String

    init(base: any HTTPClient, clock: ProviderClock, issuer: String) {
        self.base = base
        self.clock = clock
        self.origin = URL(string: issuer).map(OAuthClient.origin(of:)) ?? ""
    }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let sent = clock.deviceNow
        let response = try await base.send(request)
        if (200..<300).contains(response.status), response.header("Age") == nil, OAuthClient.origin(of: request.url) == origin {
            clock.learn(from: response, sent: sent, received: clock.deviceNow)
        }
        return response
    }
}
