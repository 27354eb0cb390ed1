import Crypto
import Foundation
import Latchkey
import LatchkeyJOSE
import LatchkeyServer

/// The server's WebAuthn assertion check (client data, authenticator data, COSE key, signature) against the bare
/// P-256 verification of the same signature, and against py_webauthn verifying the same assertion.
enum WebAuthnBenchmarks {
    static func run() async throws {
        print("WebAuthn assertion verification (ES256, the server's checks vs the bare signature and py_webauthn)")
        let rpId = "bench.example.com", origin = "https://bench.example.com"
        let authenticator = SoftwareAuthenticator()
        let creation = PublicKeyCredentialCreationOptions(
            rp: .init(id: rpId, name: "Bench"),
            user: .init(id: Data("bench-user".utf8), name: "bench", displayName: "Bench"),
            challenge: Data(repeating: 1, count: 32))
        let credential = try await authenticator.createCredential(for: creation, origin: origin)
        let publicKey = try WebAuthnBenchmarkHooks.credentialPublicKey(attestationObject: credential.attestationObject)
        let challenge = Data((0..<32).map { UInt8($0) })
        let assertion = try await authenticator.getAssertion(for: PublicKeyCredentialRequestOptions(challenge: challenge, rpId: rpId), origin: origin)

        let verify = try WebAuthnBenchmarkHooks.p256Verifier(publicKeyCOSE: publicKey)
        let result = try await Benchmarks.paired(
            {
                _ = try WebAuthnBenchmarkHooks.verifyAssertion(
                    rpId: rpId, origin: origin, credentialId: assertion.rawId,
                    clientDataJSON: assertion.clientDataJSON, authenticatorData: assertion.authenticatorData,
                    signature: assertion.signature, challenge: challenge, publicKeyCOSE: publicKey)
            },
            baseline: {
                let message = assertion.authenticatorData + Data(SHA256.hash(data: assertion.clientDataJSON))
                guard verify(assertion.signature, message) else { throw BenchError("the bare verification failed") }
            })
        Benchmarks.report("assertion verification (all checks)", paired: result, baseline: "raw P-256 verify")
        let checks = result.0
        if let python = try pyWebAuthnRate(rpId: rpId, origin: origin, assertion: assertion, challenge: challenge, publicKey: publicKey) {
            Benchmarks.report("assertion verification (all checks)", checks, baseline: "py_webauthn, same input", python)
        } else {
            print("  py_webauthn: not available (pip install webauthn; run from the repository root or Server/)")
        }
    }

    /// Runs scripts/bench/py_webauthn_verify.py on the same assertion; nil when Python or py_webauthn is missing.
    static func pyWebAuthnRate(rpId: String, origin: String, assertion: AssertionCredential, challenge: Data, publicKey: Data) throws -> Double? {
        // Run from the repository's root (scripts/bench-peers.sh) or from Server/ (`swift run` there).
        let directory = FileManager.default.currentDirectoryPath
        let candidates = [directory + "/scripts/bench/py_webauthn_verify.py", directory + "/../scripts/bench/py_webauthn_verify.py"]
        guard let script = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else { return nil }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-bench-assertion-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: input) }
        let fields = [
            "rp_id": rpId, "origin": origin, "credential_id": Base64URL.encode(assertion.rawId),
            "client_data_json": Base64URL.encode(assertion.clientDataJSON),
            "authenticator_data": Base64URL.encode(assertion.authenticatorData), "signature": Base64URL.encode(assertion.signature),
            "challenge": Base64URL.encode(challenge), "public_key_cose": Base64URL.encode(publicKey)
        ]
        try JSONEncoder().encode(fields).write(to: input)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, input.path, String(Benchmarks.seconds)]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return Double(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
