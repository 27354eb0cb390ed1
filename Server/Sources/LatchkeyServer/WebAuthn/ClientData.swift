import Foundation
import LatchkeyJOSE

/// `CollectedClientData` (WebAuthn §5.8.1), parsed from the exact `clientDataJSON` bytes the client sent.
///
/// The JSON is parsed rather than matched textually (the limited verification algorithm of §5.8.1.2 is optional);
/// `raw` keeps the bytes because the signature covers their hash, not the parsed values.
struct ClientData: Sendable {
    /// Real client data is a few hundred bytes; the bound keeps a hostile body from costing a large parse.
    static let maxLength = 16 * 1024

    let type: String
    /// The base64url-decoded challenge.
    let challenge: Data
    let origin: String
    let crossOrigin: Bool
    let topOrigin: String?
    let raw: Data

    private struct Wire: Decodable {
        var type: String
        var challenge: String
        var origin: String
        var crossOrigin: Bool?
        var topOrigin: String?
    }

    init(_ json: Data) throws {
        guard json.count <= Self.maxLength else {
            throw WebAuthnError.malformed("clientDataJSON is \(json.count) bytes (at most \(Self.maxLength))")
        }
        let wire: Wire
        do { wire = try JSONDecoder().decode(Wire.self, from: json) } catch {
            throw WebAuthnError.malformed("clientDataJSON is not the expected JSON object")
        }
        // Browsers send unpadded base64url (§5.8.1); anything else is refused rather than normalised.
        guard let challenge = Base64URL.decode(wire.challenge) else {
            throw WebAuthnError.malformed("clientDataJSON challenge is not base64url")
        }
        type = wire.type
        self.challenge = challenge
        origin = wire.origin
        crossOrigin = wire.crossOrigin ?? false
        topOrigin = wire.topOrigin
        raw = json
    }
}
