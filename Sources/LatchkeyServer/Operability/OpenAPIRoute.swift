import Hummingbird
import NIOCore

extension IdentityServer {
    /// `GET /openapi.json`: the API description (`api/openapi.json`), for client generators and API checkers.
    func addOpenAPIRoute(_ router: Router<LatchkeyRequestContext>) {
        let body = ByteBuffer(string: OpenAPIDocument.json)
        router.get("/openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "public, max-age=3600"],
                body: .init(byteBuffer: body))
        }
    }
}
