import Foundation

/// base64url without padding (RFC 7515 §2), the encoding of every JOSE segment and of PKCE challenges.
///
/// Both directions work on bytes with a table: the former round trip through Foundation's base64 with character
/// replacements built a `String` scalar by scalar and was most of the cost of parsing a token.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The 6-bit value of each byte of the alphabet; 0xFF for every other byte.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()

    public static func encode(_ data: some DataProtocol) -> String {
        let bytes = Array(data)
        let alphabet = Self.alphabet
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(chunk >> 18 & 63)]); out.append(alphabet[Int(chunk >> 12 & 63)])
            out.append(alphabet[Int(chunk >> 6 & 63)]); out.append(alphabet[Int(chunk & 63)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let chunk = UInt32(bytes[index]) << 16
            out.append(alphabet[Int(chunk >> 18 & 63)]); out.append(alphabet[Int(chunk >> 12 & 63)])
        case 2:
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out.append(alphabet[Int(chunk >> 18 & 63)]); out.append(alphabet[Int(chunk >> 12 & 63)]); out.append(alphabet[Int(chunk >> 6 & 63)])
        default: break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes unpadded base64url; returns nil for anything else (padding, `+`/`/`, whitespace, a length no encoding
    /// produces, or unused low bits that are not zero), because accepting several spellings of one token invites
    /// signature-bypass tricks: each byte string has exactly one accepted encoding.
    public static func decode(_ string: some StringProtocol) -> Data? {
        decode(utf8: string.utf8)
    }

    /// `decode` of the UTF-8 bytes of a text (a slice of a token's bytes, say).
    public static func decode(utf8 bytes: some Collection<UInt8>) -> Data? {
        if let decoded = bytes.withContiguousStorageIfAvailable({ decode(bytes: $0) }) { return decoded }
        return Array(bytes).withUnsafeBufferPointer { decode(bytes: $0) }
    }

    private static func decode(bytes: UnsafeBufferPointer<UInt8>) -> Data? {
        let remainder = bytes.count % 4
        guard remainder != 1 else { return nil }
        // Straight into the result's storage: one allocation, no intermediate array; four characters make three
        // bytes, with one validity test per group (every table entry outside the alphabet has its top bit set).
        var out = Data(count: bytes.count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1))
        let valid = out.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) -> Bool in
            Self.values.withUnsafeBufferPointer { values in
                let whole = bytes.count - remainder
                var read = 0, written = 0
                while read < whole {
                    let a = UInt32(values[Int(bytes[read])]), b = UInt32(values[Int(bytes[read + 1])])
                    let c = UInt32(values[Int(bytes[read + 2])]), d = UInt32(values[Int(bytes[read + 3])])
                    guard (a | b | c | d) & 0x80 == 0 else { return false }
                    let group = a << 18 | b << 12 | c << 6 | d
                    buffer[written] = UInt8(truncatingIfNeeded: group >> 16)
                    buffer[written + 1] = UInt8(truncatingIfNeeded: group >> 8)
                    buffer[written + 2] = UInt8(truncatingIfNeeded: group)
                    read += 4
                    written += 3
                }
                guard remainder > 0 else { return true }
                // Two or three characters left: one or two bytes, and the 4 or 2 bits that pad them must be zero
                // (the canonical encoding).
                let a = UInt32(values[Int(bytes[read])]), b = UInt32(values[Int(bytes[read + 1])])
                let c = remainder == 3 ? UInt32(values[Int(bytes[read + 2])]) : 0
                guard (a | b | c) & 0x80 == 0 else { return false }
                let group = a << 18 | b << 12 | c << 6
                buffer[written] = UInt8(truncatingIfNeeded: group >> 16)
                if remainder == 3 {
                    buffer[written + 1] = UInt8(truncatingIfNeeded: group >> 8)
                    return group & 0xFF == 0
                }
                return group & 0xFFFF == 0
            }
        }
        return valid ? out : nil
    }
}
