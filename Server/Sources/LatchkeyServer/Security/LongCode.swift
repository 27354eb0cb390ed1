import Foundation

/// The codes that prove a mailbox where nothing else is asked for: password recovery (no password, no second factor)
/// and the verification of a new email address. Ten characters of Crockford's base32 (50 bits), shown as
/// `ABCDE-FGHJK`: a stranger guessing at the rates the budgets allow would need far longer than the universe has
/// existed, where six digits gave about one account a day across ten thousand.
///
/// Typed back, the code forgives what people do: lower case, spaces, the hyphen, `O` for zero and `I`/`L` for one.
enum LongCode {
    /// Crockford's base32: digits and capitals without I, L, O and U (no letter to confuse with a digit).
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    /// Characters of a code, hyphen not counted.
    static let length = 10

    /// A fresh code in its display form (`ABCDE-FGHJK`), from the system's secure random source.
    static func newCode() -> String {
        var generator = SystemRandomNumberGenerator()
        let characters = (0..<length).map { _ in alphabet[Int(generator.next(upperBound: UInt32(alphabet.count)))] }
        return String(characters.prefix(length / 2)) + "-" + String(characters.suffix(length / 2))
    }

    /// The form that is digested and compared: upper case, no spaces or hyphens, look-alikes mapped to digits.
    static func normalized(_ submitted: String) -> String {
        String(
            submitted.uppercased().compactMap { character -> Character? in
                switch character {
                case " ", "-", "\t", "\n", "\r": nil
                case "O": "0"
                case "I", "L": "1"
                default: character
                }
            })
    }
}
