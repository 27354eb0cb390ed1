import Foundation

/// A CBOR data item (RFC 8949), limited to what WebAuthn attestation objects and COSE keys contain: integers, byte
/// and text strings, arrays, maps, booleans and null. No floats, tags or indefinite lengths — an authenticator never
/// needs them, and leaving them out keeps the encoder small enough to review.
public indirect enum CBORValue: Sendable, Hashable {
    /// Major type 0.
    case unsigned(UInt64)
    /// Major type 1: the value `-1 - n` (so `.negative(0)` is -1 and `.negative(UInt64.max)` is -2^64).
    case negative(UInt64)
    /// Major type 2.
    case bytes(Data)
    /// Major type 3 (UTF-8).
    case text(String)
    /// Major type 4.
    case array([CBORValue])
    /// Major type 5. Keys are written in CTAP2 canonical order whatever the dictionary order.
    case map([CBORValue: CBORValue])
    /// Simple values 20/21.
    case bool(Bool)
    /// Simple value 22.
    case null

    /// Any signed 64-bit integer in its shortest form (COSE labels and algorithm identifiers are negative).
    public static func int(_ value: Int64) -> CBORValue {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// The deterministic encoding (RFC 8949 §4.2.1 preferred serialization; maps sorted as CTAP2 §6 requires).
    public var encoded: Data {
        var out = Data()
        encode(into: &out)
        return out
    }

    func encode(into out: inout Data) {
        switch self {
        case .unsigned(let n): Self.head(0, n, into: &out)
        case .negative(let n): Self.head(1, n, into: &out)
        case .bytes(let d):
            Self.head(2, UInt64(d.count), into: &out)
            out.append(d)
        case .text(let s):
            let utf8 = Data(s.utf8)
            Self.head(3, UInt64(utf8.count), into: &out)
            out.append(utf8)
        case .array(let items):
            Self.head(4, UInt64(items.count), into: &out)
            for item in items { item.encode(into: &out) }
        case .map(let entries):
            Self.head(5, UInt64(entries.count), into: &out)
            // CTAP2 canonical form: keys compared by their encodings — shorter first, then bytewise. The major type
            // lives in the first byte's high bits, so this also puts integers before strings.
            let encodedEntries = entries.map { (key: $0.key.encoded, value: $0.value) }
                .sorted { Self.canonicalOrder($0.key, $1.key) }
            for entry in encodedEntries {
                out.append(entry.key)
                entry.value.encode(into: &out)
            }
        case .bool(let b): out.append(b ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        }
    }

    /// CTAP2 canonical ordering of two encoded keys.
    static func canonicalOrder(_ a: Data, _ b: Data) -> Bool {
        if a.count != b.count { return a.count < b.count }
        return a.lexicographicallyPrecedes(b)
    }

    /// The initial byte(s): major type and argument in the shortest form.
    private static func head(_ major: UInt8, _ argument: UInt64, into out: inout Data) {
        let type = major << 5
        switch argument {
        case 0..<24: out.append(type | UInt8(argument))
        case 24...0xFF: out.append(contentsOf: [type | 24, UInt8(argument)])
        case 0x100...0xFFFF: out.append(type | 25); appendBigEndian(argument, bytes: 2, into: &out)
        case 0x1_0000...0xFFFF_FFFF: out.append(type | 26); appendBigEndian(argument, bytes: 4, into: &out)
        default: out.append(type | 27); appendBigEndian(argument, bytes: 8, into: &out)
        }
    }

    private static func appendBigEndian(_ value: UInt64, bytes: Int, into out: inout Data) {
        for shift in stride(from: (bytes - 1) * 8, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}

/// COSE key encoding (RFC 9052/9053) of the one key type the software authenticator makes.
public enum COSEKey {
    /// COSE algorithm identifier of ES256 (ECDSA P-256 with SHA-256).
    public static let es256: Int64 = -7

    /// An EC2 P-256 public key: `{1: 2 (kty EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}`, as WebAuthn's
    /// attested credential data carries it.
    /// - Parameter raw: the 64-byte `x || y` of the public key.
    public static func ec2P256(rawRepresentation raw: Data) -> CBORValue {
        let bytes = Data(raw)
        return .map([
            .int(1): .int(2), .int(3): .int(es256), .int(-1): .int(1),
            .int(-2): .bytes(Data(bytes.prefix(32))), .int(-3): .bytes(Data(bytes.dropFirst(32)))
        ])
    }
}
