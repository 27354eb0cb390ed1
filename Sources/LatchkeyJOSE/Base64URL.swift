import Foundation

/// base64url without padding (RFC 7515 §2), the encoding of every JOSE segment and of PKCE challenges.
public enum Base64URL {
    public static func encode(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes unpadded base64url; returns nil for anything else (padding, `+`/`/`, whitespace),
    /// because accepting several spellings of one token invites signature-bypass tricks.
    public static func decode(_ string: some StringProtocol) -> Data? {
        var base64 = ""
        base64.reserveCapacity(string.utf8.count + 3)
        for scalar in string.unicodeScalars {
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9": base64.unicodeScalars.append(scalar)
            case "-": base64.append("+")
            case "_": base64.append("/")
            default: return nil
            }
        }
        switch base64.utf8.count % 4 {
        case 0: break
        case 2: base64 += "=="
        case 3: base64 += "="
        default: return nil
        }
        return Data(base64Encoded: base64)
    }
}
