import Foundation

/// A strict, bounded CBOR decoder (RFC 8949), decoding only.
///
/// Well-formedness rules enforced: reserved additional information 28–30 is rejected; indefinite lengths are only
/// allowed on strings, arrays and maps; indefinite-string chunks must be definite strings of the same major type;
/// a "break" only closes an indefinite container; two-byte simple values below 32 are rejected; text must be valid
/// UTF-8 (per chunk); map keys must be unique. Non-preferred (longer than necessary) heads are accepted, because
/// well-formed is what RFC 8949 requires of a generic decoder and WebAuthn stores the exact bytes it received.
enum CBORDecoder {
    /// Decodes exactly one data item; bytes after it are an error.
    static func decode(_ data: Data, limits: CBORLimits = .webAuthn) throws -> CBORValue {
        let (value, length) = try decodePrefix(data, limits: limits)
        guard length == data.count else {
            throw CBORError(reason: "\(data.count - length) trailing byte(s) after the data item", offset: length)
        }
        return value
    }

    /// Decodes the data item at the start of `data` and says how many bytes it took. Authenticator data needs this:
    /// the credential public key is followed directly by the extensions map, with no length prefix.
    static func decodePrefix(_ data: Data, limits: CBORLimits = .webAuthn) throws -> (value: CBORValue, length: Int) {
        var reader = Reader(bytes: [UInt8](data), limits: limits)
        let value = try reader.item(depth: 0)
        return (value, reader.position)
    }

    /// The cursor over the input. `position` only ever advances by amounts already checked against `remaining`,
    /// so offset arithmetic cannot overflow.
    private struct Reader {
        let bytes: [UInt8]
        let limits: CBORLimits
        var position = 0
        var items = 0

        init(bytes: [UInt8], limits: CBORLimits) {
            self.bytes = bytes
            self.limits = limits
        }

        var remaining: Int { bytes.count - position }

        /// The head of a data item: major type, additional information and its argument.
        struct Head {
            var major: UInt8
            var info: UInt8
            var argument: UInt64
            var offset: Int
            var isIndefinite: Bool { info == 31 }
        }

        func fail(_ reason: String, at offset: Int? = nil) -> CBORError {
            CBORError(reason: reason, offset: offset ?? position)
        }

        mutating func byte() throws -> UInt8 {
            guard position < bytes.count else { throw fail("unexpected end of input") }
            let b = bytes[position]
            position += 1
            return b
        }

        mutating func uint(byteCount: Int) throws -> UInt64 {
            guard remaining >= byteCount else { throw fail("unexpected end of input in a \(byteCount)-byte argument") }
            var value: UInt64 = 0
            for _ in 0..<byteCount { value = value << 8 | UInt64(bytes[position]); position += 1 }
            return value
        }

        mutating func head() throws -> Head {
            let offset = position
            let initial = try byte()
            let major = initial >> 5, info = initial & 0x1f
            let argument: UInt64
            switch info {
            case 0..<24: argument = UInt64(info)
            case 24: argument = try uint(byteCount: 1)
            case 25: argument = try uint(byteCount: 2)
            case 26: argument = try uint(byteCount: 4)
            case 27: argument = try uint(byteCount: 8)
            case 28, 29, 30: throw fail("reserved additional information \(info)", at: offset)
            default: argument = 0  // 31: indefinite length or break, interpreted by the caller
            }
            return Head(major: major, info: info, argument: argument, offset: offset)
        }

        mutating func countItem(at offset: Int) throws {
            items += 1
            guard items <= limits.maxItems else { throw fail("more than \(limits.maxItems) data items", at: offset) }
        }

        /// Converts a claimed string length to `Int` after checking it against the limit and the input left, so a
        /// header claiming 2^63 bytes fails before anything is allocated.
        func checkedLength(_ argument: UInt64, head: Head) throws -> Int {
            guard let length = Int(exactly: argument), length <= limits.maxLength else {
                throw fail("string length \(argument) exceeds the limit of \(limits.maxLength)", at: head.offset)
            }
            guard length <= remaining else {
                throw fail("string length \(argument) exceeds the \(remaining) byte(s) left", at: head.offset)
            }
            return length
        }

        /// Converts a claimed element count, checking it against the item budget and the input left (every element
        /// takes at least `bytesPerElement` bytes), before any array is reserved.
        func checkedCount(_ argument: UInt64, bytesPerElement: Int, head: Head) throws -> Int {
            let budget = limits.maxItems - items
            guard let count = Int(exactly: argument), count <= budget else {
                throw fail("container claims \(argument) elements, more than the item limit allows", at: head.offset)
            }
            let (needed, overflow) = count.multipliedReportingOverflow(by: bytesPerElement)
            guard !overflow, needed <= remaining else {
                throw fail("container claims \(argument) elements but only \(remaining) byte(s) are left", at: head.offset)
            }
            return count
        }

        mutating func item(depth: Int) throws -> CBORValue {
            let head = try head()
            return try item(head: head, depth: depth)
        }

        mutating func item(head: Head, depth: Int) throws -> CBORValue {
            try countItem(at: head.offset)
            switch head.major {
            case 0:
                guard !head.isIndefinite else { throw fail("indefinite length on an unsigned integer", at: head.offset) }
                return .unsigned(head.argument)
            case 1:
                guard !head.isIndefinite else { throw fail("indefinite length on a negative integer", at: head.offset) }
                return .negative(head.argument)
            case 2:
                return .bytes(Data(try string(head: head)))
            case 3:
                return .text(try text(head: head))
            case 4:
                try checkDepth(depth, head: head)
                return .array(try array(head: head, depth: depth))
            case 5:
                try checkDepth(depth, head: head)
                return .map(try map(head: head, depth: depth))
            case 6:
                guard !head.isIndefinite else { throw fail("indefinite length on a tag", at: head.offset) }
                try checkDepth(depth, head: head)
                return .tagged(head.argument, try item(depth: depth + 1))
            default:
                return try simpleOrFloat(head: head)
            }
        }

        func checkDepth(_ depth: Int, head: Head) throws {
            guard depth < limits.maxDepth else { throw fail("nesting deeper than \(limits.maxDepth)", at: head.offset) }
        }

        /// The content of a byte or text string; indefinite strings are joined from their definite chunks.
        mutating func string(head: Head) throws -> [UInt8] {
            if !head.isIndefinite {
                let length = try checkedLength(head.argument, head: head)
                defer { position += length }
                return Array(bytes[position..<position + length])
            }
            var joined: [UInt8] = []
            while true {
                let chunk = try self.head()
                if chunk.major == 7 && chunk.isIndefinite { return joined }
                guard chunk.major == head.major, !chunk.isIndefinite else {
                    throw fail("indefinite-length string chunk is not a definite string of the same type", at: chunk.offset)
                }
                try countItem(at: chunk.offset)
                let length = try checkedLength(chunk.argument, head: chunk)
                guard length <= limits.maxLength - joined.count else {
                    throw fail("joined string longer than \(limits.maxLength)", at: chunk.offset)
                }
                let content = bytes[position..<position + length]
                if head.major == 3 { try validateUTF8(content, at: chunk.offset) }
                joined.append(contentsOf: content)
                position += length
            }
        }

        mutating func text(head: Head) throws -> String {
            let content = try string(head: head)
            // Indefinite chunks were validated one by one (a chunk may not split a character, RFC 8949 §3.2.3).
            if !head.isIndefinite { try validateUTF8(content[...], at: head.offset) }
            return String(decoding: content, as: UTF8.self)
        }

        func validateUTF8(_ content: ArraySlice<UInt8>, at offset: Int) throws {
            // The standard library's UTF-8 decoder rejects overlong forms, surrogates and values above U+10FFFF.
            let hadError = transcode(
                content.makeIterator(), from: UTF8.self, to: UTF32.self,
                stoppingOnError: true, into: { _ in })
            guard !hadError else { throw fail("text string is not valid UTF-8", at: offset) }
        }

        mutating func array(head: Head, depth: Int) throws -> [CBORValue] {
            var elements: [CBORValue] = []
            if head.isIndefinite {
                while true {
                    let next = try self.head()
                    if next.major == 7 && next.isIndefinite { return elements }
                    elements.append(try item(head: next, depth: depth + 1))
                }
            }
            let count = try checkedCount(head.argument, bytesPerElement: 1, head: head)
            elements.reserveCapacity(count)
            for _ in 0..<count { elements.append(try item(depth: depth + 1)) }
            return elements
        }

        mutating func map(head: Head, depth: Int) throws -> [CBORMapEntry] {
            var entries: [CBORMapEntry] = []
            var seen = Set<CBORValue>()
            func add(_ key: CBORValue, at offset: Int, _ value: CBORValue) throws {
                guard seen.insert(key).inserted else { throw fail("duplicate map key", at: offset) }
                entries.append(CBORMapEntry(key: key, value: value))
            }
            if head.isIndefinite {
                while true {
                    let keyHead = try self.head()
                    if keyHead.major == 7 && keyHead.isIndefinite { return entries }
                    let key = try item(head: keyHead, depth: depth + 1)
                    let valueHead = try self.head()
                    guard !(valueHead.major == 7 && valueHead.isIndefinite) else {
                        throw fail("map ends after a key without a value", at: valueHead.offset)
                    }
                    try add(key, at: keyHead.offset, try item(head: valueHead, depth: depth + 1))
                }
            }
            let count = try checkedCount(head.argument, bytesPerElement: 2, head: head)
            entries.reserveCapacity(count)
            for _ in 0..<count {
                let keyOffset = position
                let key = try item(depth: depth + 1)
                try add(key, at: keyOffset, try item(depth: depth + 1))
            }
            return entries
        }

        func simpleOrFloat(head: Head) throws -> CBORValue {
            switch head.info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            case 23: return .undefined
            case 0..<20: return .simple(head.info)
            case 24:
                // RFC 8949 §3.3: simple values 0–31 must use the one-byte form.
                guard head.argument >= 32 else {
                    throw fail("two-byte simple value \(head.argument) below 32", at: head.offset)
                }
                return .simple(UInt8(truncatingIfNeeded: head.argument))
            case 25: return .float(Self.halfToDouble(UInt16(truncatingIfNeeded: head.argument)))
            case 26: return .float(Double(Float(bitPattern: UInt32(truncatingIfNeeded: head.argument))))
            case 27: return .float(Double(bitPattern: head.argument))
            default: throw fail("unexpected break outside an indefinite-length container", at: head.offset)
            }
        }

        /// IEEE 754 binary16 → Double (RFC 8949 Appendix D), without relying on `Float16`, which is unavailable on
        /// some platforms this package builds for.
        static func halfToDouble(_ half: UInt16) -> Double {
            let exponent = Int((half >> 10) & 0x1f)
            let mantissa = Double(half & 0x3ff)
            let magnitude: Double
            switch exponent {
            case 0: magnitude = mantissa * 0x1p-24
            case 31: magnitude = mantissa == 0 ? .infinity : .nan
            default: magnitude = (1 + mantissa / 1024) * Double(sign: .plus, exponent: exponent - 15, significand: 1)
            }
            return half & 0x8000 != 0 ? -magnitude : magnitude
        }
    }
}
