import Foundation
@testable import Latchkey
import Testing

/// The provider's time from `Date` headers (clocks that disagree).
@Suite("SDK: the provider's clock learned from Date headers")
struct ProviderClockTests {
    static func response(date: String?) -> HTTPResponse {
        HTTPResponse(status: 200, headers: date.map { ["Date": $0] } ?? [:], body: Data())
    }

    @Test("IMF-fixdate is read exactly; obsolete and malformed forms are not")
    func httpDates() {
        #expect(ProviderClock.httpDate("Sun, 06 Nov 1994 08:49:37 GMT")?.timeIntervalSince1970 == 784_111_777)
        #expect(ProviderClock.httpDate("Thu, 26 Nov 2026 13:30:17 GMT")?.timeIntervalSince1970 == 1_795_699_817)
        #expect(ProviderClock.httpDate("Thu, 29 Feb 2024 00:00:00 GMT")?.timeIntervalSince1970 == 1_709_164_800)
        for bad in [
            "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT", "", "garbage"
        ] {
            #expect(ProviderClock.httpDate(bad) == nil, "\(bad)")
        }
    }

    @Test("the offset is learned from the middle of the exchange; small ones are none, absurd ones are ignored")
    func offsets() {
        let device = Date(timeIntervalSince1970: 1_795_699_817)
        let clock = ProviderClock(device: ManualClock(start: device).clock)
        clock.learn(from: Self.response(date: "Thu, 26 Nov 2026 13:40:17 GMT"), sent: device, received: device)  // +600 s
        #expect(abs(clock.offset - 600.5) < 0.01)
        #expect(abs(clock.now.timeIntervalSince(device) - 600.5) < 0.01)
        clock.learn(from: Self.response(date: "Thu, 26 Nov 2026 13:30:18 GMT"), sent: device, received: device)
        #expect(clock.offset == 0, "a second and a half is rounding, not skew")
        clock.learn(from: Self.response(date: "Thu, 26 Nov 2026 13:20:17 GMT"), sent: device, received: device)
        #expect(abs(clock.offset + 599.5) < 0.01)
        clock.learn(from: Self.response(date: "Sat, 26 Dec 2026 13:30:17 GMT"), sent: device, received: device)
        #expect(abs(clock.offset + 599.5) < 0.01, "a month off is not believed")
        clock.learn(from: Self.response(date: nil), sent: device, received: device)
        #expect(abs(clock.offset + 599.5) < 0.01, "no header: nothing learned")
    }
}
