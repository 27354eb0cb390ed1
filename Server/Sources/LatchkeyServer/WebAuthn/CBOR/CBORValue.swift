import Foundation

/// One decoded CBOR data item (RFC 8949 §3), as WebAuthn needs it: attestation objects, COSE keys and
/// authenticator extensions. The model keeps what the wire said (tags, simple values, map order) so that callers
/// can be strict about shapes instead of the decoder guessing.
indirect enum CBORValue: Sendable, Hashable {
    case unsigned(UInt64)
    /// The value is `-1 - n`, so the whole major-type-1 range (down to -2^64) is representable.
    case negative(UInt64)
    case bytes(Data)
    case text(String)
    case array([CBORValue])
    /// Entries in wire order; the decoder rejects duplicate keys, so lookups are unambiguous.
    case map([CBORMapEntry])
    case tagged(UInt64, CBORValue)
    case bool(Bool)
    case null
    case undefined
    /// Half-, single- and double-precision floats, widened to `Double` (exact for all three).
    case float(Double)
    /// Simple values other than false/true/null/undefined (0–19 and 32–255).
    case simple(UInt8)

    /// Map lookup by integer key, the way COSE labels are written (`1` = kty, `-1` = crv …).
    subscript(key: Int) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        let wanted: CBORValue = key >= 0 ? .unsigned(UInt64(key)) : .negative(UInt64(-(key + 1)))
        return entries.first { $0.key == wanted }?.value
    }

    /// Map lookup by text key (`"fmt"`, `"attStmt"`, `"alg"` …).
    subscript(key: String) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == .text(key) }?.value
    }

    /// Integers that fit in `Int`; nil for anything else, so out-of-range labels never alias small ones.
    var intValue: Int? {
        switch self {
        case .unsigned(let n): return Int(exactly: n)
        case .negative(let n):
            guard let magnitude = Int(exactly: n) else { return nil }
            return -1 - magnitude
        default: return nil
        }
    }

    var bytesValue: Data? {
        if case .bytes(let data) = self { return data }
        return nil
    }

    var textValue: String? {
        if case .text(let text) = self { return text }
        return nil
    }

    var arrayValue: [CBORValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// The entries of a map, in wire order.
    var mapValue: [CBORMapEntry]? {
        if case .map(let entries) = self { return entries }
        return nil
    }
}

/// One key/value pair of a CBOR map. Maps are kept as ordered entries rather than a dictionary because CBOR keys
/// can be any data item and because wire order matters for diagnostics.
struct CBORMapEntry: Sendable, Hashable {
    var key: CBORValue
    var value: CBORValue
}

/// Resource bounds for decoding untrusted CBOR. Every bound is checked *before* the corresponding allocation or
/// recursion, so a few hostile bytes can never cost more than the limits allow.
struct CBORLimits: Sendable {
    /// Maximum container/tag nesting; the decoder recurses at most this deep.
    var maxDepth: Int
    /// Maximum number of data items in one document (containers, their elements and tags each count).
    var maxItems: Int
    /// Maximum length of one byte or text string (after joining indefinite-length chunks).
    var maxLength: Int

    init(maxDepth: Int, maxItems: Int, maxLength: Int) {
        self.maxDepth = maxDepth
        self.maxItems = maxItems
        self.maxLength = maxLength
    }

    /// Generous for real authenticators (attestation objects are a few KiB with depth ≤ 4; certificate chains in
    /// `x5c` stay well under 64 KiB each) yet small enough that hostile input stays cheap.
    static let webAuthn = CBORLimits(maxDepth: 16, maxItems: 10_000, maxLength: 64 * 1024)
}

/// A CBOR decoding failure: what was wrong and at which byte offset of the input.
struct CBORError: Error, Sendable, CustomStringConvertible {
    var reason: String
    var offset: Int

    init(reason: String, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    var description: String { "CBOR: \(reason) at offset \(offset)" }
}
