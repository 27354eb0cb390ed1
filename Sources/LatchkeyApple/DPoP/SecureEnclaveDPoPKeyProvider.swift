#if canImport(CryptoKit)
import CryptoKit
#else
import AppleFrameworkStandIns  // Linux: CryptoKit's SecureEnclave, name for name (ARCHITECTURE §7)
import Crypto
#endif
import Foundation
import Latchkey
import LatchkeyJOSE

/// DPoP keys (RFC 9449) made in the Secure Enclave where the device has one: the private key never leaves the
/// hardware, and the session stores only an opaque handle that works on this device alone — a copied Keychain or
/// backup is useless elsewhere. On a device without one (the Simulator, older Macs) keys are software P-256 keys,
/// stored with the session's tokens. The Apple client (`LatchkeyClient(prefersEphemeralWebBrowserSession:…)`) uses it.
public struct SecureEnclaveDPoPKeyProvider: DPoPKeyProvider {
    /// How a stored reference says "a Secure Enclave handle" (software references are PEM).
    static let referencePrefix = "secure-enclave:"

    /// A provider.
    public init() {}

    public func makeKey() async throws -> any DPoPSigningKey {
        guard SecureEnclave.isAvailable else { return try await SoftwareDPoPKeyProvider().makeKey() }
        do {
            return try SecureEnclaveDPoPKey(handle: SecureEnclave.P256.Signing.PrivateKey().dataRepresentation)
        } catch let error as LatchkeyError {
            throw error
        } catch {
            throw LatchkeyError(.unknownError, "the Secure Enclave could not make a DPoP key", underlying: error)
        }
    }

    public func key(persistentReference: String) async throws -> any DPoPSigningKey {
        guard persistentReference.hasPrefix(Self.referencePrefix) else {
            return try await SoftwareDPoPKeyProvider().key(persistentReference: persistentReference)
        }
        guard let handle = Data(base64Encoded: String(persistentReference.dropFirst(Self.referencePrefix.count))) else {
            throw LatchkeyError(.invalidToken, "the stored DPoP key reference is damaged; sign in again")
        }
        return try SecureEnclaveDPoPKey(handle: handle)
    }
}

/// A P-256 key in the Secure Enclave, known by its handle (re-opened for each signature: the handle is a value).
struct SecureEnclaveDPoPKey: DPoPSigningKey {
    private let handle: Data
    let publicJWK: JWK
    var algorithm: String { "ES256" }
    var persistentReference: String { SecureEnclaveDPoPKeyProvider.referencePrefix + handle.base64EncodedString() }

    init(handle: Data) throws {
        let key: SecureEnclave.P256.Signing.PrivateKey
        do { key = try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: handle) } catch {
            // A handle from another device (a restored backup) or a reset Secure Enclave: the session cannot prove
            // its key any more, which is what binding it to this device was for.
            throw LatchkeyError(
                .invalidToken, "the session's DPoP key is not in this device's Secure Enclave; sign in again",
                underlying: error)
        }
        self.handle = handle
        publicJWK = JWK.p256(rawPublicKey: key.publicKey.rawRepresentation)
    }

    func sign(_ input: Data) async throws -> Data {
        try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: handle).signature(for: input).rawRepresentation
    }
}
