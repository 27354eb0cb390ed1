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
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 3 / 4)
        var index = 0
        var accumulator: UInt32 = 0
        var bits = 0
        let values = Self.values  // once: a static's accessor in the loop costs a lazy-initialization check per byte
        while index < bytes.count {
            let value = values[Int(bytes[index])]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
            index += 1
        }
        // 2 or 4 bits left over: they pad the last byte and must be zero (the canonical encoding).
        guard accumulator == 0 else { return nil }
        return Data(out)
    }
}
