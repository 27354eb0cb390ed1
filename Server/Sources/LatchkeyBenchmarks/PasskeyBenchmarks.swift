import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Latchkey
import LatchkeyJOSE
import LatchkeyServer

/// What a passkey sign-in costs the server against a password sign-in at the production bcrypt cost, each from the
/// credential to the reachFive `tkn` over loopback HTTP, with `GET /health` as the baseline of the same run.
enum PasskeyBenchmarks {
    static func run() async throws {
        print("Passkey vs password sign-in over loopback HTTP (credential → tkn, sequential)")
        let bench = try await BenchServer.start {
            $0.bcryptCost = 12
            $0.loginPolicy.maxChallengesPerAddress = .max  // the loop is one address asking as fast as it can
        }
        let base = "http://127.0.0.1:\(bench.port)"
        let origin = base
        let session = URLSession(configuration: .ephemeral)

        func send(_ path: String, _ body: JSONValue? = nil) async throws -> Data {
            guard let url = URL(string: base + path) else { throw BenchError("bad URL") }
            var request = URLRequest(url: url)
            if let body {
                request.httpMethod = "POST"
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = try JSONEncoder().encode(body)
            }
            let (data, response) = try await session.data(for: request)
            guard (response as? HTTPURLResponse)?.statusCode == 200 else {
                throw BenchError("\(path): \((response as? HTTPURLResponse)?.statusCode ?? 0) \(String(decoding: data, as: UTF8.self))")
            }
            return data
        }
        func timed(_ n: Int, _ body: () async throws -> Void) async throws -> Double {
            for _ in 0..<3 { try await body() }
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<n { try await body() }
            return Double(n) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }

        // One account with a passkey, made through the endpoints.
        let authenticator = SoftwareAuthenticator()
        let options = try await send(
            "/identity/v1/webauthn/signup-options",
            .object([
                "client_id": .string("latchkey-demo"), "origin": .string(origin),
                "profile": .object(["email": .string("bench@example.com")])
            ]))
        let creation = try RegistrationOptions(json: options)
        let credential = try await authenticator.createCredential(for: creation.options, origin: origin)
        _ = try await send(
            "/identity/v1/webauthn/signup",
            .object([
                "webauthn_id": .string(creation.options.user.encodedId), "public_key_credential": credential.reachFiveJSON
            ]))

        let health = try await timed(200) { _ = try await send("/health") }
        let passkey = try await timed(100) {
            let raw = try await send(
                "/identity/v1/webauthn/authentication-options",
                .object(["client_id": .string("latchkey-demo"), "origin": .string(origin)]))
            let request = try PublicKeyCredentialRequestOptions(json: raw, style: .reachFive)
            let assertion = try await authenticator.getAssertion(for: request, origin: origin)
            _ = try await send("/identity/v1/webauthn/authentication", assertion.reachFiveJSON)
        }
        let password = try await timed(10) {
            _ = try await send(
                "/identity/v1/password/login",
                .object([
                    "email": .string(DevelopmentDefaults.demoUsername), "password": .string(DevelopmentDefaults.demoPassword),
                    "client_id": .string("latchkey-demo")
                ]))
        }
        Benchmarks.report("passkey sign-in (2 requests)", passkey, baseline: "GET /health", health)
        Benchmarks.report("password sign-in (bcrypt 12)", password, baseline: "GET /health", health)
        Benchmarks.report("passkey sign-in", passkey, baseline: "password sign-in", password)
        await bench.stop()
    }
}
