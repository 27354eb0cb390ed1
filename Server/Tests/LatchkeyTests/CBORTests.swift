import Foundation
@testable import Latchkey
import Testing

/// A small CBOR decoder for the tests only: it reads back what the authenticator wrote, so the structure can be
/// checked independently of the encoder's code paths.
enum TestCBOR {
    struct Malformed: Error {}

    static func decode(_ data: Data) throws -> CBORValue {
        var index = data.startIndex
        let value = try item(data, &index)
        guard index == data.endIndex else { throw Malformed() }
        return value
    }

    private static func item(_ d: Data, _ i: inout Data.Index) throws -> CBORValue {
        guard i < d.endIndex else { throw Malformed() }
        let initial = d[i]; i += 1
        let major = initial >> 5
        let info = initial & 0x1F
        func argument() throws -> UInt64 {
            switch info {
            case 0..<24: return UInt64(info)
            case 24...27:
                let count = 1 << Int(info - 24)
                guard d.endIndex - i >= count else { throw Malformed() }
                var v: UInt64 = 0
                for _ in 0..<count { v = v << 8 | UInt64(d[i]); i += 1 }
                return v
            default: throw Malformed()
            }
        }
        switch major {
        case 0: return .unsigned(try argument())
        case 1: return .negative(try argument())
        case 2, 3:
            let n = Int(try argument())
            guard d.endIndex - i >= n else { throw Malformed() }
            let bytes = Data(d[i..<(i + n)]); i += n
            if major == 2 { return .bytes(bytes) }
            guard let s = String(data: bytes, encoding: .utf8) else { throw Malformed() }
            return .text(s)
        case 4: return .array(try (0..<Int(try argument())).map { _ in try item(d, &i) })
        case 5:
            var out: [CBORValue: CBORValue] = [:]
            for _ in 0..<Int(try argument()) { let k = try item(d, &i); out[k] = try item(d, &i) }
            return .map(out)
        case 7:
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            default: throw Malformed()
            }
        default: throw Malformed()
        }
    }

    /// The map's keys in the order they were written (to check canonical ordering).
    static func mapKeyOrder(_ data: Data) throws -> [CBORValue] {
        var i = data.startIndex
        guard data[i] >> 5 == 5 else { throw Malformed() }
        let count = Int(data[i] & 0x1F); i += 1
        var keys: [CBORValue] = []
        for _ in 0..<count {
            let keyStart = i
            _ = try item(data, &i)
            keys.append(try decode(Data(data[keyStart..<i])))
            _ = try item(data, &i)
        }
        return keys
    }
}

extension Data {
    init(hex: String) {
        var bytes: [UInt8] = []
        var iterator = hex.makeIterator()
        while let a = iterator.next(), let b = iterator.next() { bytes.append(UInt8(String([a, b]), radix: 16) ?? 0) }
        self.init(bytes)
    }
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

@Suite("CBOR encoder: RFC 8949 Appendix A vectors and CTAP2 canonical maps")
struct CBORTests {
    static let vectors: [(CBORValue, String)] = [
        (.unsigned(0), "00"), (.unsigned(1), "01"), (.unsigned(10), "0a"), (.unsigned(23), "17"), (.unsigned(24), "1818"),
        (.unsigned(25), "1819"), (.unsigned(100), "1864"), (.unsigned(1000), "1903e8"), (.unsigned(1_000_000), "1a000f4240"),
        (.unsigned(1_000_000_000_000), "1b000000e8d4a51000"), (.unsigned(UInt64.max), "1bffffffffffffffff"),
        (.negative(UInt64.max), "3bffffffffffffffff"), (.int(-1), "20"), (.int(-10), "29"), (.int(-100), "3863"), (.int(-1000), "3903e7"),
        (.bool(false), "f4"), (.bool(true), "f5"), (.null, "f6"),
        (.bytes(Data()), "40"), (.bytes(Data([1, 2, 3, 4])), "4401020304"),
        (.text(""), "60"), (.text("a"), "6161"), (.text("IETF"), "6449455446"), (.text("\"\\"), "62225c"), (.text("\u{00fc}"), "62c3bc"),
        (.text("\u{6c34}"), "63e6b0b4"), (.text("\u{10151}"), "64f0908591"),
        (.array([]), "80"), (.array([.int(1), .int(2), .int(3)]), "83010203"),
        (.array([.int(1), .array([.int(2), .int(3)]), .array([.int(4), .int(5)])]), "8301820203820405"),
        (.array((1...25).map { .int(Int64($0)) }), "98190102030405060708090a0b0c0d0e0f101112131415161718181819"),
        (.map([:]), "a0"), (.map([.int(1): .int(2), .int(3): .int(4)]), "a201020304"),
        (.map([.text("a"): .int(1), .text("b"): .array([.int(2), .int(3)])]), "a26161016162820203"),
        (.array([.text("a"), .map([.text("b"): .text("c")])]), "826161a161626163"),
        (
            .map([.text("a"): .text("A"), .text("b"): .text("B"), .text("c"): .text("C"), .text("d"): .text("D"), .text("e"): .text("E")]),
            "a56161614161626142616361436164614461656145"
        )
    ]

    @Test(arguments: 0..<CBORTests.vectors.count)
    func appendixAVector(_ index: Int) throws {
        let (value, hex) = Self.vectors[index]
        #expect(value.encoded.hex == hex)
        #expect(try TestCBOR.decode(value.encoded) == value)
    }

    @Test func integersUseTheShortestForm() {
        #expect(CBORValue.int(23).encoded.hex == "17")
        #expect(CBORValue.int(255).encoded.hex == "18ff")
        #expect(CBORValue.int(256).encoded.hex == "190100")
        #expect(CBORValue.int(65_536).encoded.hex == "1a00010000")
        #expect(CBORValue.int(-24).encoded.hex == "37")
        #expect(CBORValue.int(-25).encoded.hex == "3818")
        #expect(CBORValue.int(Int64.min).encoded.hex == "3b7fffffffffffffff")
    }

    @Test func mapsAreSortedCanonicallyWhateverTheInsertionOrder() throws {
        // CTAP2: shorter encoded keys first, then bytewise; integers (major 0/1) before text (major 3).
        let value = CBORValue.map([
            .text("authData"): .null, .text("fmt"): .null, .int(-3): .null, .text("attStmt"): .null,
            .int(1): .null, .int(-1): .null, .int(3): .null, .int(-2): .null, .int(24): .null
        ])
        let keys = try TestCBOR.mapKeyOrder(value.encoded)
        #expect(keys == [.int(1), .int(3), .int(-1), .int(-2), .int(-3), .int(24), .text("fmt"), .text("attStmt"), .text("authData")])
    }

    @Test func coseKeyIsCanonicalEC2() throws {
        let raw = Data((0..<64).map { UInt8($0) })
        let encoded = COSEKey.ec2P256(rawRepresentation: raw).encoded
        #expect(try TestCBOR.mapKeyOrder(encoded) == [.int(1), .int(3), .int(-1), .int(-2), .int(-3)])
        guard case .map(let m) = try TestCBOR.decode(encoded) else { Issue.record("not a map"); return }
        #expect(m[.int(1)] == .int(2))
        #expect(m[.int(3)] == .int(-7))
        #expect(m[.int(-1)] == .int(1))
        #expect(m[.int(-2)] == .bytes(raw.prefix(32)))
        #expect(m[.int(-3)] == .bytes(Data(raw.suffix(32))))
        // a5 01 02 03 26 20 01 21 58 20 <x> 22 58 20 <y>
        #expect(encoded.prefix(10).hex == "a50102032620012158" + "20")
    }
}
