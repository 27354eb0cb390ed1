import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension IdentityServer {
    /// `GET /health` answers while the process serves; `GET /ready` only when it can do its work: the store answers
    /// and signing keys are loaded (503 otherwise, without internal detail — the log has it).
    func addHealthRoutes(_ router: Router<LatchkeyRequestContext>) {
        router.get("/health") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "ok")))
        }
        router.get("/ready") { _, _ in try await self.readiness() }
    }

    private func readiness() async throws -> Response {
        struct Status: Encodable { var status: String; var checks: [String: String] }
        var checks: [String: String] = [:]
        do {
            _ = try await store.client(id: "latchkey-readiness-probe")
            checks["store"] = "ok"
        } catch {
            logger.error("readiness: the store does not answer", metadata: ["error": .string(String(describing: error).prefix(200).description)])
            checks["store"] = "unavailable"
        }
        do {
            checks["keys"] = try await keys.jwks().keys.isEmpty ? "missing" : "ok"
        } catch {
            logger.error("readiness: signing keys cannot be loaded", metadata: ["error": .string(String(describing: error).prefix(200).description)])
            checks["keys"] = "unavailable"
        }
        let ready = checks.values.allSatisfy { $0 == "ok" }
        return try Responses.json(
            Status(status: ready ? "ready" : "unavailable", checks: checks), status: ready ? .ok : .serviceUnavailable,
            noStore: true)
    }
}
