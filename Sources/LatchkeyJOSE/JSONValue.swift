import Foundation

/// Any JSON value, for claims whose shape is not fixed (custom claims, `address`, `act`).
public enum JSONValue: Codable, Sendable, Hashable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case object([String: JSONValue])
    case array([JSONValue])
    case null

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let n = try? c.decode(Double.self) {
            self = .number(n)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let s): try c.encode(s)
        case .number(let n):
            if n.rounded() == n, abs(n) < 1e15 { try c.encode(Int64(n)) } else { try c.encode(n) }
        case .bool(let b): try c.encode(b)
        case .object(let o): try c.encode(o)
        case .array(let a): try c.encode(a)
        case .null: try c.encodeNil()
        }
    }

    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var doubleValue: Double? { if case .number(let n) = self { n } else { nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    /// The members of an object.
    public var objectValue: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }
    /// The elements of an array.
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    /// Strings or arrays of strings (the two legal shapes of `aud`).
    public var stringArray: [String]? {
        switch self {
        case .string(let s): [s]
        case .array(let a): a.compactMap(\.stringValue).count == a.count ? a.compactMap(\.stringValue) : nil
        default: nil
        }
    }
}
