import Foundation
import Testing
@testable import LatchkeyServer

/// Hex helpers for the RFC 8949 vectors.
extension Data {
    init(hex: String) {
        var bytes: [UInt8] = []
        var pending: UInt8?
        for c in hex.unicodeScalars {
            guard let nibble = UInt8(String(c), radix: 16) else { continue }
            if let high = pending { bytes.append(high << 4 | nibble); pending = nil } else { pending = nibble }
        }
        self.init(bytes)
    }
}

@Suite("WebAuthn CBOR decoder")
struct WebAuthnCBORDecoderTests {
    static func text(_ s: String) -> CBORValue { .text(s) }
    static func m(_ pairs: [(CBORValue, CBORValue)]) -> CBORValue { .map(pairs.map { CBORMapEntry(key: $0.0, value: $0.1) }) }

    /// RFC 8949 Appendix A, every example except the floats (checked separately) and bignum arithmetic (tags kept).
    static let vectors: [(String, CBORValue)] = [
        ("00", .unsigned(0)), ("01", .unsigned(1)), ("0a", .unsigned(10)), ("17", .unsigned(23)), ("1818", .unsigned(24)),
        ("1819", .unsigned(25)), ("1864", .unsigned(100)), ("1903e8", .unsigned(1000)), ("1a000f4240", .unsigned(1_000_000)),
        ("1b000000e8d4a51000", .unsigned(1_000_000_000_000)), ("1bffffffffffffffff", .unsigned(.max)),
        ("c249010000000000000000", .tagged(2, .bytes(Data(hex: "010000000000000000")))),
        ("3bffffffffffffffff", .negative(.max)),
        ("c349010000000000000000", .tagged(3, .bytes(Data(hex: "010000000000000000")))),
        ("20", .negative(0)), ("29", .negative(9)), ("3863", .negative(99)), ("3903e7", .negative(999)),
        ("f4", .bool(false)), ("f5", .bool(true)), ("f6", .null), ("f7", .undefined), ("f0", .simple(16)), ("f8ff", .simple(255)),
        ("c074323031332d30332d32315432303a30343a30305a", .tagged(0, .text("2013-03-21T20:04:00Z"))),
        ("c11a514b67b0", .tagged(1, .unsigned(1_363_896_240))),
        ("c1fb41d452d9ec200000", .tagged(1, .float(1_363_896_240.5))),
        ("d74401020304", .tagged(23, .bytes(Data([1, 2, 3, 4])))),
        ("d818456449455446", .tagged(24, .bytes(Data(hex: "6449455446")))),
        ("d82076687474703a2f2f7777772e6578616d706c652e636f6d", .tagged(32, .text("http://www.example.com"))),
        ("40", .bytes(Data())), ("4401020304", .bytes(Data([1, 2, 3, 4]))),
        ("60", .text("")), ("6161", .text("a")), ("6449455446", .text("IETF")), ("62225c", .text("\"\\")),
        ("62c3bc", .text("\u{00fc}")), ("63e6b0b4", .text("\u{6c34}")), ("64f0908591", .text("\u{10151}")),
        ("80", .array([])), ("83010203", .array([.unsigned(1), .unsigned(2), .unsigned(3)])),
        ("8301820203820405", .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])])),
        ("98190102030405060708090a0b0c0d0e0f101112131415161718181819", .array((1...25).map { .unsigned(UInt64($0)) })),
        ("a0", .map([])), ("a201020304", m([(.unsigned(1), .unsigned(2)), (.unsigned(3), .unsigned(4))])),
        ("a26161016162820203", m([(text("a"), .unsigned(1)), (text("b"), .array([.unsigned(2), .unsigned(3)]))])),
        ("826161a161626163", .array([text("a"), m([(text("b"), text("c"))])])),
        (
            "a56161614161626142616361436164614461656145",
            m([(text("a"), text("A")), (text("b"), text("B")), (text("c"), text("C")), (text("d"), text("D")), (text("e"), text("E"))])
        ),
        ("5f42010243030405ff", .bytes(Data([1, 2, 3, 4, 5]))), ("7f657374726561646d696e67ff", .text("streaming")),
        ("9fff", .array([])),
        ("9f018202039f0405ffff", .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])])),
        ("9f01820203820405ff", .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])])),
        ("83018202039f0405ff", .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])])),
        ("83019f0203ff820405", .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])])),
        ("9f0102030405060708090a0b0c0d0e0f101112131415161718181819ff", .array((1...25).map { .unsigned(UInt64($0)) })),
        ("bf61610161629f0203ffff", m([(text("a"), .unsigned(1)), (text("b"), .array([.unsigned(2), .unsigned(3)]))])),
        ("826161bf61626163ff", .array([text("a"), m([(text("b"), text("c"))])])),
        ("bf6346756ef563416d7421ff", m([(text("Fun"), .bool(true)), (text("Amt"), .negative(1))]))
    ]

    @Test("RFC 8949 Appendix A examples", arguments: vectors.indices)
    func appendixA(index: Int) async throws {
        let (hex, expected) = Self.vectors[index]
        #expect(try CBORDecoder.decode(Data(hex: hex)) == expected, "vector \(hex)")
    }

    /// RFC 8949 Appendix A floats, half/single/double precision; NaN compared by `isNaN`.
    static let floats: [(String, Double)] = [
        ("f90000", 0.0), ("f98000", -0.0), ("f93c00", 1.0), ("fb3ff199999999999a", 1.1), ("f93e00", 1.5),
        ("f97bff", 65504.0), ("fa47c35000", 100_000.0), ("fa7f7fffff", 3.4028234663852886e+38),
        ("fb7e37e43c8800759c", 1.0e+300), ("f90001", 5.960464477539063e-8), ("f90400", 0.00006103515625),
        ("f9c400", -4.0), ("fbc010666666666666", -4.1), ("f97c00", .infinity), ("f97e00", .nan), ("f9fc00", -.infinity),
        ("fa7f800000", .infinity), ("fa7fc00000", .nan), ("faff800000", -.infinity),
        ("fb7ff0000000000000", .infinity), ("fb7ff8000000000000", .nan), ("fbfff0000000000000", -.infinity)
    ]

    @Test("RFC 8949 Appendix A floats", arguments: floats.indices)
    func appendixAFloats(index: Int) async throws {
        let (hex, expected) = Self.floats[index]
        guard case .float(let value) = try CBORDecoder.decode(Data(hex: hex)) else {
            Issue.record("\(hex) is not a float"); return
        }
        if expected.isNaN {
            #expect(value.isNaN)
        } else {
            #expect(value == expected && value.sign == expected.sign, "\(hex) gave \(value)")
        }
    }

    /// Not-well-formed inputs (RFC 8949 Appendix F and our stricter rules), each with the reason we expect.
    static let malformed: [(String, String)] = [
        ("", "end of input"), ("18", "end of input"), ("1901", "end of input"), ("1a010203", "end of input"),
        ("1b01020304050607", "end of input"), ("38", "end of input"), ("58", "end of input"), ("98", "end of input"),
        ("9a01ff00", "end of input"), ("b8", "end of input"), ("d8", "end of input"), ("f8", "end of input"),
        ("f900", "end of input"), ("fa0000", "end of input"), ("fb000000", "end of input"),
        ("41", "string length"), ("61", "string length"), ("5affffffff00", "string length"),
        ("5b7fffffffffffffff010203", "string length"), ("7affffffff00", "string length"),
        ("81", "elements"), ("818181818181818181", "elements"), ("8200", "elements"), ("a1", "elements"),
        ("a20102", "elements"), ("a100", "elements"), ("c0", "end of input"),
        ("5f4100", "end of input"), ("7f6100", "end of input"), ("9f", "end of input"), ("9f0102", "end of input"),
        ("bf", "end of input"), ("bf01020102", "duplicate map key"), ("819f", "end of input"), ("9f8000", "end of input"),
        ("1c", "reserved"), ("1d", "reserved"), ("1e", "reserved"), ("3c", "reserved"), ("5d", "reserved"),
        ("7e", "reserved"), ("9c", "reserved"), ("bd", "reserved"), ("de", "reserved"), ("fc", "reserved"),
        ("f800", "simple value"), ("f801", "simple value"), ("f818", "simple value"), ("f81f", "simple value"),
        ("1f", "indefinite length on an unsigned"), ("3f", "indefinite length on a negative"), ("df", "indefinite length on a tag"),
        ("ff", "break"), ("81ff", "break"), ("8200ff", "break"), ("a1ff", "elements"), ("a1ff00", "break"), ("a100ff", "break"),
        ("bf00ff", "without a value"), ("bf000000ff", "without a value"),
        ("5f00ff", "chunk"), ("5f21ff", "chunk"), ("5f6100ff", "chunk"), ("5f80ff", "chunk"), ("7f4100ff", "chunk"),
        ("5f5f4100ffff", "chunk"), ("7f7f6100ffff", "chunk"),
        ("61ff", "UTF-8"), ("62c080", "UTF-8"), ("63eda080", "UTF-8"), ("7f61c361bcff", "UTF-8"),
        ("a201000100", "duplicate map key"), ("a26161006161 01", "duplicate map key"),
        ("0000", "trailing"), ("9bffffffffffffffff", "item limit"), ("bb7fffffffffffffff", "item limit")
    ]

    @Test("Malformed CBOR is rejected with a clear reason", arguments: malformed.indices)
    func malformedInput(index: Int) async {
        let (hex, reason) = Self.malformed[index]
        do {
            let value = try CBORDecoder.decode(Data(hex: hex))
            Issue.record("\(hex) decoded to \(value)")
        } catch let error as CBORError {
            #expect(error.reason.contains(reason), "\(hex): \(error)")
        } catch {
            Issue.record("\(hex) threw \(error)")
        }
    }

    @Test("A header claiming 2^63 bytes fails fast, before allocating")
    func hugeClaimedLength() async {
        for hex in ["5b7fffffffffffffff", "7b7fffffffffffffff", "5bffffffffffffffff00", "9b7fffffffffffffff00"] {
            #expect(throws: CBORError.self) { try CBORDecoder.decode(Data(hex: hex)) }
        }
        // Within the input but beyond maxLength.
        var long = Data(hex: "5a00020000")
        long.append(Data(count: 0x20000))
        #expect(throws: CBORError.self) { try CBORDecoder.decode(long) }
    }

    @Test("100 000 nested arrays, indefinite arrays, maps and tags stop at the depth limit")
    func deepNesting() async {
        for opener: UInt8 in [0x81, 0x9f, 0xa1, 0xc0] {
            var data = Data(repeating: opener, count: 100_000)
            data.append(0x00)
            do {
                _ = try CBORDecoder.decode(data)
                Issue.record("nesting with \(opener) accepted")
            } catch let error as CBORError {
                #expect(error.reason.contains("nesting") || error.reason.contains("end of input"), "\(error)")
            } catch { Issue.record("\(error)") }
        }
        // Exactly at the limit is fine.
        var ok = Data(repeating: 0x81, count: CBORLimits.webAuthn.maxDepth)
        ok.append(0x00)
        #expect(throws: Never.self) { try CBORDecoder.decode(ok) }
        var tooDeep = Data(repeating: 0x81, count: CBORLimits.webAuthn.maxDepth + 1)
        tooDeep.append(0x00)
        #expect(throws: CBORError.self) { try CBORDecoder.decode(tooDeep) }
    }

    @Test("The item limit bounds wide inputs")
    func itemLimit() async {
        var data = Data(hex: "9f")
        data.append(Data(repeating: 0x00, count: 20_000))
        data.append(0xff)
        #expect(throws: CBORError.self) { try CBORDecoder.decode(data) }
        var small = Data(hex: "9f")
        small.append(Data(repeating: 0x00, count: 100))
        small.append(0xff)
        #expect(throws: CBORError.self) { try CBORDecoder.decode(small, limits: CBORLimits(maxDepth: 4, maxItems: 50, maxLength: 10)) }
    }

    @Test("decodePrefix reports the length and leaves the rest")
    func prefix() async throws {
        let (value, length) = try CBORDecoder.decodePrefix(Data(hex: "a201020304ff00"))
        #expect(length == 5)
        #expect(value[1] == .unsigned(2))
        #expect(value[3]?.intValue == 4)
        #expect(value["x"] == nil)
    }

    @Test("Accessors: intValue bounds, negative labels, text and bytes")
    func accessors() async throws {
        #expect(CBORValue.unsigned(.max).intValue == nil)
        #expect(CBORValue.negative(.max).intValue == nil)
        #expect(CBORValue.negative(UInt64(Int.max)).intValue == Int.min)
        let key = try CBORDecoder.decode(Data(hex: "a3200121410303 26"))
        #expect(key[-1] == .unsigned(1))
        #expect(key[-2]?.bytesValue == Data([3]))
        #expect(key[3]?.intValue == -7)
        #expect(key["xd"] == nil)
        #expect(key[-3] == nil)
        #expect(try CBORDecoder.decode(Data(hex: "6449455446")).textValue == "IETF")
        #expect(try CBORDecoder.decode(Data(hex: "83010203")).arrayValue?.count == 3)
    }
}
