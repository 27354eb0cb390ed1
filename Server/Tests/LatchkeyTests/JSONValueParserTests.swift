import Foundation
@testable import LatchkeyJOSE
import Testing

/// The strict JSON reader under token claims and headers, and the canonical base64url it reads them from.
@Suite("JOSE: JSON values and base64url")
struct JSONValueParserTests {
    @Test("reads what JSONSerialization reads, to the same values")
    func agreesWithFoundation() throws {
        let texts = [
            #"{"iss":"https://id.example.com","aud":["a","b"],"exp":1700000000,"n":-1.5e3,"t":true,"f":false,"z":null,"o":{"k":[{}, []]}}"#,
            #"{"s":"quote \" slash \/ backslash \\ tab \t nl \n uni \u00e9 astral \ud83d\ude00 ctl \u0001"}"#,
            #"  [1, 2.25, -0, 0.5e-2, 1E+2]  "#,
            #""plain""#, "42", "true", "null",
            #"{"ünïcödé":"日本語","emoji":"👍🏽"}"#
        ]
        for text in texts {
            let ours = try JSONValue.parse(Data(text.utf8))
            let theirs = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
            let reencoded = try JSONDecoder().decode(
                JSONValue.self, from: try JSONSerialization.data(withJSONObject: theirs, options: [.fragmentsAllowed]))
            #expect(Self.sameNumbers(ours, reencoded), "\(text)")
        }
    }

    /// JSONSerialization turns `true` into a number on some platforms; compare values with that in mind.
    static func sameNumbers(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.bool(let x), .number(let y)): return (x ? 1 : 0) == y
        case (.object(let x), .object(let y)): return x.keys.sorted() == y.keys.sorted() && x.allSatisfy { sameNumbers($0.value, y[$0.key] ?? .null) }
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(sameNumbers)
        default: return a == b
        }
    }

    @Test(
        "refuses what RFC 8259 and RFC 7515 §5.2 refuse",
        arguments: [
            #"{"sub":"a","sub":"b"}"#,  // duplicate member: which `sub` would count?
            #"{"a":1,}"#, "[1,]", "{", "[", #"{"a" 1}"#, "01", "1.", ".5", "-", "1e", "+1", "NaN", "Infinity", "1e400",
            #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, #""\x""#, #""\u12""#, "\"a\u{01}b\"", #""unterminated"#,
            "tru", "nul", "true false", "{} {}", ""
        ])
    func refuses(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data(text.utf8)) }
    }

    @Test("refuses invalid UTF-8 and nesting past the limit")
    func bytesAndDepth() {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data([0x22, 0xC3, 0x28, 0x22])) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data([0x22, 0xFF, 0x22])) }
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data(deep.utf8)) }
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect((try? JSONValue.parse(Data(fine.utf8))) != nil)
        // A hostile depth fails cleanly, without exhausting the stack.
        let hostile = String(repeating: "[", count: 100_000)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data(hostile.utf8)) }
    }

    @Test(
        "numbers read on the integer fast path equal what Double reads",
        arguments: [
            "0", "-0", "7", "-7", "1700000000", "123456789012345", "-12345678901234", "999999999999999", "-99999999999999",
            "1234567890123456", "12345678901234567890", "1e3", "1E3", "-2.5", "0.1", "1e-7", "-0.0"
        ])
    func numbers(_ text: String) throws {
        let expected = try #require(Double(text))
        let read = try JSONValue.parse(Data(text.utf8))
        guard case .number(let value) = read else { Issue.record("\(text) is not a number: \(read)"); return }
        #expect(value == expected && value.sign == expected.sign, "\(text)")
        guard case .object(let object) = try JSONValue.parse(Data(#"{"exp":\#(text)}"#.utf8)) else { Issue.record("not an object"); return }
        #expect(object["exp"] == .number(expected))
    }

    @Test("base64url round-trips every length and accepts only the canonical spelling")
    func base64url() {
        for length in 0..<70 {
            let bytes = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(
                text
                    == bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: ""))
            #expect(Base64URL.decode(text) == bytes)
        }
        #expect(Base64URL.decode("AQ") == Data([1]))
        #expect(Base64URL.decode("AQI") == Data([1, 2]) && Base64URL.decode("AQIDBA") == Data([1, 2, 3, 4]))
        for refused in ["AR", "AQ==", "A", "AQ=", "A+Q", "A/Q", "A Q", "AQ\n", "é", "AQJ", "AQID!", "AQIDBAUGBw?A", "AQIDBAU=BwgJ"] {
            #expect(Base64URL.decode(refused) == nil, "\(refused)")  // "AR": the same byte with non-zero unused bits
        }
    }

    @Test("a JWS header with a duplicate or mistyped member is refused")
    func headers() throws {
        func token(_ header: String) -> String { Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data("{}".utf8)) + ".c2ln" }
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: token(#"{"alg":"ES256","alg":"none"}"#)) }
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: token(#"{"alg":"ES256","kid":7}"#)) }
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: token(#"{"alg":"ES256","crit":"exp"}"#)) }
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: token(#"{"alg":"ES256","crit":["exp"]}"#)) }
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: token(#"{"kid":"k"}"#)) }
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: "a.b.c.d") }
        let parsed = try CompactJWS(parsing: token(#"{"alg":"ES256","kid":"k1","typ":"JWT","crit":[]}"#))
        #expect(parsed.header == JWSHeader(alg: "ES256", kid: "k1", typ: "JWT") || parsed.header.crit == [])
        #expect(parsed.header.alg == "ES256" && parsed.header.kid == "k1" && parsed.header.typ == "JWT")
    }

    @Test("typed claims are read as strictly as untyped ones: a duplicate member is refused, not decoded as the last")
    func typedClaimsRefuseDuplicates() throws {
        struct Claims: Decodable { var sub: String; var htu: String? }
        func token(_ claims: String) -> String {
            Base64URL.encode(Data(#"{"alg":"ES256"}"#.utf8)) + "." + Base64URL.encode(Data(claims.utf8)) + ".c2ln"
        }
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: token(#"{"sub":"a","sub":"b"}"#)).claims(as: Claims.self) }
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: token(#"{"sub":"a","htu":"x","htu":"y"}"#)).claims(as: Claims.self) }
        #expect(throws: JOSEError.self) { try CompactJWS(parsing: token(#"{"sub":"a"} x"#)).claims(as: Claims.self) }
        let claims = try CompactJWS(parsing: token(#"{"sub":"a","htu":"https://x"}"#)).claims(as: Claims.self)
        #expect(claims.sub == "a" && claims.htu == "https://x")
    }

    @Test("the UTF-8 check of systems without String(validating:) agrees with it: edge cases and 20,000 random sequences")
    func fallbackUTF8CheckAgreesWithTheStandardLibrary() {
        func agree(_ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBufferPointer { isWellFormedUTF8($0) == (String(validating: $0, as: UTF8.self) != nil) }
        }
        let cases: [[UInt8]] = [
            [], Array("plain".utf8), Array("é日👍".utf8), [0xF4, 0x8F, 0xBF, 0xBF],  // valid, up to U+10FFFF
            [0xC0, 0x80], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],  // overlong, surrogate, too large
            [0xE2, 0x82], [0x80], [0xFF], [0x61, 0xF0, 0x9F, 0x91]  // truncated, lone continuation, never valid
        ]
        for bytes in cases { #expect(agree(bytes), "\(bytes)") }
        #expect(cases[0...3].allSatisfy { $0.withUnsafeBufferPointer(isWellFormedUTF8) })
        #expect(cases[4...].allSatisfy { !$0.withUnsafeBufferPointer(isWellFormedUTF8) })
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            // Mostly bytes from the interesting ranges: lead bytes, continuations and ASCII.
            let bytes = (0..<Int.random(in: 1...8, using: &generator)).map { _ in
                [
                    UInt8.random(in: 0x80...0xBF, using: &generator), UInt8.random(in: 0xC0...0xFF, using: &generator),
                    UInt8.random(in: 0x00...0x7F, using: &generator)
                ].randomElement(using: &generator) ?? 0
            }
            #expect(agree(bytes), "\(bytes)")
        }
    }
}
