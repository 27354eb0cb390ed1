import Foundation

/// The server's times (RFC 3339, the internet profile of ISO 8601).
enum RFC3339 {
    /// `text` as a date, with or without fractional seconds; nil for anything else.
    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
