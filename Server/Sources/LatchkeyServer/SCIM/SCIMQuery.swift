import Foundation

/// A SCIM request's query string, read as SCIM clients write it.
enum SCIMQuery {
    /// One query parameter, percent-decoded. A `+` outside a quoted string is a space (form encoding, which many
    /// clients use for `userName+eq+"x"`), inside one it is itself: email addresses contain `+` far more often
    /// than user names contain spaces, and clients rarely escape it.
    static func value(_ name: String, in query: String) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0].removingPercentEncoding == name else { continue }
            guard parts.count == 2 else { return "" }
            var bytes: [UInt8] = []
            var inString = false, escaped = false
            var raw = Array(parts[1].utf8)[...]
            while let byte = raw.popFirst() {
                var decoded = byte
                if byte == UInt8(ascii: "%"), raw.count >= 2,
                    let value = UInt8(String(decoding: raw.prefix(2), as: UTF8.self), radix: 16)
                {
                    decoded = value
                    raw = raw.dropFirst(2)
                } else if byte == UInt8(ascii: "+") {
                    decoded = inString ? byte : UInt8(ascii: " ")
                }
                if inString {
                    if escaped {
                        escaped = false
                    } else if decoded == UInt8(ascii: "\\") {
                        escaped = true
                    } else if decoded == UInt8(ascii: "\"") {
                        inString = false
                    }
                } else if decoded == UInt8(ascii: "\"") {
                    inString = true
                }
                bytes.append(decoded)
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        return nil
    }
}
