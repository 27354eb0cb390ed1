import Dispatch
import Foundation
import Latchkey
import LatchkeyServer

/// One harness: the bytes go to real parsing code, whose results and thrown errors are discarded.
struct FuzzTarget: Sendable {
    var name: String
    /// libFuzzer's `-max_len`: comfortably above the largest valid input the seeds hold.
    var maxLength: Int
    var summary: String
    var run: @Sendable (Data) -> Void
}

/// The dispatch table. Tests/fuzz/corpus/<name>/ holds each target's seeds.
enum FuzzTargets {
    typealias Server = LatchkeyServerFuzzEntryPoints

    static let all: [FuzzTarget] = [
        FuzzTarget(
            name: "cbor", maxLength: 4096,
            summary: "server CBOR decoder (WebAuthn); the SDK's CBOR encoder must round-trip what it decodes"
        ) { data in
            Server.cbor(data)
            CBORRoundTrip.check(data)
        },
        FuzzTarget(name: "cose-key", maxLength: 2048, summary: "COSE_Key (stored credential public key) and a signature check") {
            Server.coseKey($0)
        },
        FuzzTarget(name: "authenticator-data", maxLength: 4096, summary: "WebAuthn authenticator data") {
            Server.authenticatorData($0)
        },
        FuzzTarget(name: "attestation-object", maxLength: 8192, summary: "WebAuthn attestation object; packed statements and x5c") { data in
            blocking { await Server.attestationObject(data) }
        },
        FuzzTarget(name: "client-data-json", maxLength: 4096, summary: "WebAuthn clientDataJSON") {
            Server.clientDataJSON($0)
        },
        FuzzTarget(name: "jws", maxLength: 8192, summary: "compact JWS/JWT parsing, verification, header jwk, DPoP proof claims") {
            JOSEHarness.jws($0)
        },
        FuzzTarget(name: "json", maxLength: 4096, summary: "LatchkeyJOSE's JSON reader (claims, headers), against Foundation's") {
            JOSEHarness.json($0)
        },
        FuzzTarget(name: "jwks", maxLength: 8192, summary: "JWK Set documents: key selection, thumbprints, verification") {
            JOSEHarness.jwks($0)
        },
        FuzzTarget(name: "id-token", maxLength: 4096, summary: "SDK ID-token validation of a claims payload the harness signs") {
            SDKHarness.idToken($0)
        },
        FuzzTarget(
            name: "callback", maxLength: 4096,
            summary: "SDK redirect callback: loopback listener request line, then the callback URL handling"
        ) {
            SDKHarness.callback($0)
        },
        FuzzTarget(name: "flow-response", maxLength: 16384, summary: "SDK decoding of /flow/execute answers (200 and error bodies)") {
            SDKHarness.flowResponse($0)
        },
        FuzzTarget(name: "scim-filter", maxLength: 2048, summary: "SCIM list query string and filter expressions") {
            Server.scimFilter($0)
        },
        FuzzTarget(name: "scim-path", maxLength: 1024, summary: "SCIM PATCH attribute paths") {
            Server.scimPath($0)
        },
        FuzzTarget(name: "scim-patch", maxLength: 8192, summary: "SCIM PATCH/PUT bodies applied to an account") { data in
            blocking { await Server.scimPatch(data) }
        },
        FuzzTarget(
            name: "token-body", maxLength: 4096,
            summary: "token endpoint bodies (byte 0: content type), Basic credentials, grant parameters"
        ) { data in
            blocking { await Server.tokenBody(data) }
        }
    ]

    static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// Runs async parsing code to completion from the synchronous fuzzer callback (which is not on the cooperative pool).
func blocking(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        await body()
        done.signal()
    }
    done.wait()
}

/// The SDK's CBOR encoder (what its software authenticator sends) against the server's decoder: whatever the server
/// decodes into the SDK's model, the SDK must encode into bytes the server decodes to the same value, and encoding
/// that value again must give the same bytes. A mismatch traps, so the fuzzer reports it.
enum CBORRoundTrip {
    static func check(_ data: Data) {
        guard let decoded = LatchkeyServerFuzzEntryPoints.cborForRoundTrip(data), let value = sdkValue(decoded) else { return }
        let encoded = value.encoded
        guard let again = LatchkeyServerFuzzEntryPoints.cborForRoundTrip(encoded), let reencoded = sdkValue(again)?.encoded else {
            fatalError("CBOR round trip: the server cannot decode the SDK's encoding \(encoded.map { String(format: "%02x", $0) }.joined())")
        }
        guard reencoded == encoded else {
            fatalError("CBOR round trip: \(encoded.map { String(format: "%02x", $0) }.joined()) re-encodes differently")
        }
    }

    static func sdkValue(_ value: FuzzCBOR) -> CBORValue? {
        switch value {
        case .unsigned(let n): return .unsigned(n)
        case .negative(let n): return .negative(n)
        case .bytes(let d): return .bytes(d)
        case .text(let s): return .text(s)
        case .bool(let b): return .bool(b)
        case .null: return .null
        case .array(let items):
            var converted: [CBORValue] = []
            for item in items {
                guard let c = sdkValue(item) else { return nil }
                converted.append(c)
            }
            return .array(converted)
        case .map(let entries):
            var converted: [CBORValue: CBORValue] = [:]
            for entry in entries {
                // Swift compares strings by canonical equivalence; keys that differ only so would collapse here.
                guard let k = sdkValue(entry.key), let v = sdkValue(entry.value), converted[k] == nil else { return nil }
                converted[k] = v
            }
            return .map(converted)
        }
    }
}
