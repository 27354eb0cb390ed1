#if !canImport(CryptoKit)
import Crypto
import Foundation

/// Stand-in for CryptoKit's `SecureEnclave` (P-256 signing keys only). The key lives "in" the simulated device: its
/// `dataRepresentation` is an opaque handle that only the device that made it can turn back into a key, as on Apple.
/// Left out of the initializers: `accessControl` and `authenticationContext` (Security and LocalAuthentication types
/// the SDK never passes; Apple's defaults apply to the calls it makes).
public enum SecureEnclave {
    /// Whether the device has a Secure Enclave (scripted: `StandInDevice.hasSecureEnclave`).
    public static var isAvailable: Bool { StandInSystem.device.hasSecureEnclave }

    /// `SecureEnclave.P256`.
    public enum P256 {
        /// `SecureEnclave.P256.Signing`.
        public enum Signing {
            /// `SecureEnclave.P256.Signing.PrivateKey` (not declared `Sendable` here: code that compiles without it compiles
            /// against Apple's either way).
            public struct PrivateKey {
                private let key: Crypto.P256.Signing.PrivateKey
                /// The opaque handle of the key (usable on this device only).
                public let dataRepresentation: Data
                /// The corresponding public key.
                public var publicKey: Crypto.P256.Signing.PublicKey { key.publicKey }

                /// A new key in the device's Secure Enclave; throws where there is none.
                public init(compactRepresentable: Bool = true) throws {
                    let device = StandInSystem.device
                    let key = Crypto.P256.Signing.PrivateKey(compactRepresentable: compactRepresentable)
                    self.dataRepresentation = try device.sealInSecureEnclave(key.rawRepresentation)
                    self.key = key
                }

                /// The key behind a handle made by this device's Secure Enclave.
                public init(dataRepresentation: Data) throws {
                    let raw = try StandInSystem.device.openFromSecureEnclave(dataRepresentation)
                    self.key = try Crypto.P256.Signing.PrivateKey(rawRepresentation: raw)
                    self.dataRepresentation = dataRepresentation
                }

                /// An ECDSA P-256 / SHA-256 signature of `data`.
                public func signature<D: DataProtocol>(for data: D) throws -> Crypto.P256.Signing.ECDSASignature {
                    try key.signature(for: data)
                }
            }
        }
    }
}

/// Why the simulated Secure Enclave refused (CryptoKit reports these as `CryptoKitError`s).
public enum SecureEnclaveStandInError: Error, Sendable {
    /// The device has no Secure Enclave.
    case unavailable
    /// The handle was made by another device, or altered.
    case invalidHandle
}

extension StandInDevice {
    func sealInSecureEnclave(_ raw: Data) throws -> Data {
        guard hasSecureEnclave else { throw SecureEnclaveStandInError.unavailable }
        guard let sealed = try AES.GCM.seal(raw, using: secureEnclaveKey).combined else { throw SecureEnclaveStandInError.unavailable }
        return sealed
    }

    func openFromSecureEnclave(_ handle: Data) throws -> Data {
        guard hasSecureEnclave else { throw SecureEnclaveStandInError.unavailable }
        guard let box = try? AES.GCM.SealedBox(combined: handle), let raw = try? AES.GCM.open(box, using: secureEnclaveKey) else {
            throw SecureEnclaveStandInError.invalidHandle
        }
        return raw
    }
}
#endif
