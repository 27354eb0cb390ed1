import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LatchkeyJOSE
import LatchkeyServer

/// `swift run -c release latchkey-bench`: every figure is a ratio against a baseline measured in the same run, so
/// results compare across machines; absolute rates are printed for context only.
@main
struct Benchmarks {
    static func main() async throws {
        print("Latchkey benchmarks (\(ProcessInfo.processInfo.processorCount) cores)")
        // `latchkey-bench [GROUP…]`: the named groups only (to profile one), all of them without arguments.
        let groups: [(name: String, run: () async throws -> Void)] = [
            ("jose", { try await jose() }),
            ("idtoken", { try await SDKBenchmarks.idTokenValidation() }),
            ("sdk", { try await SDKBenchmarks.tokenPaths() }),
            ("server", { try await ServerBenchmarks.run() }),
            ("refresh", { try await ServerBenchmarks.refreshOnly() }),
            ("webauthn", { try await WebAuthnBenchmarks.run() }),
            ("passkey", { try await PasskeyBenchmarks.run() }),
            ("scale", { try await ScaleBenchmarks.run() })
        ]
        let asked = Set(CommandLine.arguments.dropFirst())
        if let unknown = asked.first(where: { name in !groups.contains { $0.name == name } }) {
            print("unknown group \(unknown); groups: \(groups.map(\.name).joined(separator: " "))")
            return
        }
        for group in groups where asked.isEmpty || asked.contains(group.name) { try await group.run() }
    }

    /// How long each rate is measured: 1 s, or `LATCHKEY_BENCH_SECONDS` (short under a profiler such as callgrind).
    static let seconds = Double(ProcessInfo.processInfo.environment["LATCHKEY_BENCH_SECONDS"] ?? "") ?? 1.0

    /// Runs `body` repeatedly for about `seconds` and returns operations per second.
    static func rate(_ seconds: Double = Benchmarks.seconds, _ body: () throws -> Void) rethrows -> Double {
        for _ in 0..<20 { try body() }  // warm-up
        var count = 0
        let start = DispatchTime.now().uptimeNanoseconds
        var elapsed = 0.0
        repeat {
            for _ in 0..<20 { try body() }
            count += 20
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        } while elapsed < seconds
        return Double(count) / elapsed
    }

    /// The measured and baseline rates taken in alternation, five rounds of a fifth of `seconds` each, and the
    /// median of the five ratios: a burst of load from elsewhere hits both sides of a round, not one figure.
    static func paired(_ measured: () async throws -> Void, baseline: () async throws -> Void) async rethrows -> (Double, Double, ratio: Double) {
        var rounds: [(Double, Double)] = []
        for _ in 0..<5 {
            let m = try await SDKBenchmarks.asyncRate(seconds / 5, measured)
            let b = try await SDKBenchmarks.asyncRate(seconds / 5, baseline)
            rounds.append((m, b))
        }
        let ratios = rounds.map { $0.0 / $0.1 }.sorted()
        let measuredRates = rounds.map(\.0).sorted(), baselineRates = rounds.map(\.1).sorted()
        return (measuredRates[2], baselineRates[2], ratios[2])
    }

    /// `report` of a `paired` measurement (the ratio is the median of the rounds', not the quotient of the medians).
    static func report(_ name: String, paired result: (Double, Double, ratio: Double), baseline name2: String) {
        func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
        print(
            "  " + pad(name, 34) + String(format: "%9.0f/s", result.0) + "   vs " + pad(name2, 22)
                + String(format: "%9.0f/s   ratio %.2f (median of 5 alternating rounds)", result.1, result.ratio))
    }

    static func report(_ name: String, _ measured: Double, baseline name2: String, _ base: Double) {
        func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
        print(
            "  " + pad(name, 34) + String(format: "%9.0f/s", measured) + "   vs " + pad(name2, 22)
                + String(format: "%9.0f/s   ratio %.2f", base, measured / base))
    }

    static func jose() async throws {
        print("JOSE (sign/verify of a 300-byte ID token vs the bare signature primitive)")
        struct Claims: Codable {
            var iss = "http://localhost:8090"; var sub = UUID().uuidString; var aud = "latchkey-demo"
            var exp = 2_000_000_000; var iat = 1_700_000_000; var nonce = "n-0S6_PzA3Ze"; var email = "demo@example.com"; var name = "Demo User"
        }
        for alg in [JWSAlgorithm.es256, .rs256] {
            let key = try SigningKey.generate(alg)
            let set = JWKSet(keys: [try key.publicJWK()])
            let token = try key.sign(claims: Claims())
            let input = Data(token.split(separator: ".").prefix(2).joined(separator: ".").utf8)
            let signature = try key.sign(input)
            let jwk = try key.publicJWK()
            report(
                "\(alg.rawValue) JWS sign (encode+sign)",
                paired: try await paired(
                    { _ = try key.sign(claims: Claims()) },
                    baseline: { _ = try key.sign(input) }),
                baseline: "raw \(alg.rawValue) signature")
            let prepared = try PreparedKey(jwk)  // the bare primitive: the library's key built once
            report(
                "\(alg.rawValue) JWS parse+verify",
                paired: try await paired(
                    { try CompactJWS(parsing: token).verify(with: set) },
                    baseline: { _ = try prepared.verify(signature: signature, for: input, algorithm: alg) }),
                baseline: "raw \(alg.rawValue) verify")
        }
    }
}

struct BenchError: Error { let message: String; init(_ m: String) { message = m } }
