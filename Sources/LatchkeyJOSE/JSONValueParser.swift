import Foundation

extension JSONValue {
    /// Parses one JSON text (RFC 8259) into a value, strictly: UTF-8 only, no trailing bytes, no control characters
    /// or lone surrogates in strings, no duplicate member names (RFC 7515 §5.2: a JOSE parser must reject them or keep
    /// the last; two `aud` or `sub` members are an attack, so they are refused), nesting at most `maxDepth` deep.
    ///
    /// Why not `JSONDecoder`: decoding an untyped `JSONValue` through `Decodable` tries each type in turn and builds a
    /// `DecodingError` for every miss, which made claim parsing most of an ID token's validation time. This reads the
    /// bytes once.
    ///
    /// Throws `JSONParseError` and nothing else. The signature says plain `throws` rather than `throws(JSONParseError)`
    /// so that the module also compiles against Apple SDKs whose standard library predates Swift 6 (iOS 17.4, the one
    /// `scripts/ios-typecheck.sh` uses): the Swift 6.3 compiler crashes lowering any typed `throw` against it.
    public static func parse(_ data: Data, maxDepth: Int = 64) throws -> JSONValue {
        try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            var parser = JSONValueParser(bytes: raw.bindMemory(to: UInt8.self), maxDepth: maxDepth)
            return try parser.document()
        }
    }

    /// `parse`, for a JSON object.
    public static func parseObject(_ data: Data) throws -> [String: JSONValue] {
        guard case .object(let object) = try parse(data) else { throw JSONParseError(offset: 0, reason: "not a JSON object") }
        return object
    }
}

/// Why a JSON text was refused, and where (a byte offset).
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
    public let offset: Int
    public let reason: String
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// A recursive-descent reader over the bytes of one JSON text.
struct JSONValueParser {
    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    func error(_ reason: String) -> JSONParseError { JSONParseError(offset: index, reason: reason) }

    /// The whole text as one value, with nothing after it but whitespace.
    mutating func document() throws -> JSONValue {
        let value = try value(depth: 0)
        skipWhitespace()
        guard index == bytes.count else { throw error("trailing bytes after the value") }
        return value
    }

    mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
    }

    mutating func value(depth: Int) throws -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end") }
        let byte = bytes[index]
        if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "["), depth >= maxDepth { throw error("containers nested deeper than \(maxDepth)") }
        switch byte {
        case UInt8(ascii: "{"): return .object(try object(depth: depth))
        case UInt8(ascii: "["): return .array(try array(depth: depth))
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return .number(try number())
        }
    }

    private mutating func object(depth: Int) throws -> [String: JSONValue] {
        index += 1  // {
        // Room for a token's claims up front: growing from empty rehashed the members three times.
        var members: [String: JSONValue] = Dictionary(minimumCapacity: 8)
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return members }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let name = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            let member = try value(depth: depth + 1)
            guard members.updateValue(member, forKey: name) == nil else { throw error("duplicate member \"\(name.prefix(40))\"") }
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end in an object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            guard bytes[index] == UInt8(ascii: "}") else { throw error("expected ',' or '}'") }
            index += 1
            return members
        }
    }

    private mutating func array(depth: Int) throws -> [JSONValue] {
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return elements }
        while true {
            elements.append(try value(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end in an array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            guard bytes[index] == UInt8(ascii: "]") else { throw error("expected ',' or ']'") }
            index += 1
            return elements
        }
    }

    private mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw error("unexpected end") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw error("unknown literal") }
        index += count
    }

    private mutating func number() throws -> Double {
        let start = index
        func digits(_ parser: inout JSONValueParser) -> Int {
            let from = parser.index
            while parser.index < parser.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.index]) {
                parser.index += 1
            }
            return parser.index - from
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integer = index
        guard digits(&self) > 0 else { throw error("expected a value") }
        if bytes[integer] == UInt8(ascii: "0"), index - integer > 1 { throw error("leading zero in a number") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw error("expected digits after '.'") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw error("expected digits in the exponent") }
        }
        // Integers of up to 15 digits (every time claim) are exact in a Double and read here; the rest through `Double`.
        if index - start <= 15, !bytes[start..<index].contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }) {
            var magnitude: Int64 = 0
            for byte in bytes[integer..<index] { magnitude = magnitude * 10 + Int64(byte - UInt8(ascii: "0")) }
            return integer > start ? -Double(magnitude) : Double(magnitude)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else { throw JSONParseError(offset: start, reason: "number out of range") }
        return number
    }

    private mutating func string() throws -> String {
        index += 1  // opening quote
        let start = index
        // The common case: no escapes, so the bytes between the quotes are the string (validated as UTF-8).
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                guard let plain = validatedUTF8(UnsafeBufferPointer(rebasing: bytes[start..<index])) else {
                    throw JSONParseError(offset: start, reason: "a string is not UTF-8")
                }
                index += 1
                return plain
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw error("a control character in a string") }
            index += 1
        }
        var scalars = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                guard let text = scalars.withUnsafeBufferPointer(validatedUTF8) else {
                    throw JSONParseError(offset: start, reason: "a string is not UTF-8")
                }
                return text
            }
            guard byte >= 0x20 else { throw error("a control character in a string") }
            guard byte == UInt8(ascii: "\\") else { scalars.append(byte); index += 1; continue }
            index += 1
            guard index < bytes.count else { break }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
            case UInt8(ascii: "b"): scalars.append(0x08)
            case UInt8(ascii: "f"): scalars.append(0x0C)
            case UInt8(ascii: "n"): scalars.append(0x0A)
            case UInt8(ascii: "r"): scalars.append(0x0D)
            case UInt8(ascii: "t"): scalars.append(0x09)
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800...0xDBFF).contains(code) {
                    // A high surrogate must be followed by an escaped low one: together they are one scalar.
                    guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw error("a lone surrogate")
                    }
                    index += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("a lone surrogate") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(code) {
                    throw error("a lone surrogate")
                }
                guard let scalar = Unicode.Scalar(code) else { throw error("not a Unicode scalar") }
                scalars.append(contentsOf: String(Character(scalar)).utf8)
            default:
                throw error("unknown escape")
            }
        }
        throw error("unterminated string")
    }

    private mutating func hex4() throws -> UInt32 {
        guard bytes.count - index >= 4 else { throw error("short \\u escape") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("bad \\u escape")
            }
            code = code << 4 | digit
            index += 1
        }
        return code
    }
}

/// The bytes as a string if they are well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF), else
/// nil. `String(validating:as:)` where the system has it (Linux; Apple's systems from 2024); the package also supports
/// the year before, where `isWellFormedUTF8` checks the bytes first.
///
/// `String(validating:as:)` is declared only by the Swift 6 standard library (Xcode 16's SDKs on); an older Apple SDK
/// would not compile the call at all. `Synchronization` arrived with that same standard library, so whether it can be
/// imported tells which one this build has.
@inline(__always)
private func validatedUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
    #if canImport(Synchronization)
    if #available(macOS 15, iOS 18, tvOS 18, visionOS 2, watchOS 11, *) {
        return String(validating: bytes, as: UTF8.self)
    }
    #endif
    return isWellFormedUTF8(bytes) ? String(decoding: bytes, as: UTF8.self) : nil
}

/// Whether the bytes are well-formed UTF-8, by the standard library's strict parser.
func isWellFormedUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    var parser = Unicode.UTF8.ForwardParser()
    var iterator = bytes.makeIterator()
    while true {
        switch parser.parseScalar(from: &iterator) {
        case .valid: continue
        case .emptyInput: return true
        case .error: return false
        }
    }
}
