import Hummingbird

/// The media-type check of JSON endpoints. A cross-site page can send a POST without a CORS preflight only as a
/// "simple" request: `text/plain`, a form encoding, or a body with no type at all (`fetch` of an untyped Blob). Such
/// a body can still be valid JSON, so JSON endpoints refuse every non-empty body that is not declared JSON (415):
/// the browser's own rules then keep other sites from acting on these endpoints with the user's network or cookies.
enum JSONMediaType {
    /// Whether the request's `Content-Type` (parameters such as `charset` aside) is one of `accepted`.
    static func accepts(_ request: Request, _ accepted: Set<String> = ["application/json"]) -> Bool {
        let header = request.headers[.contentType]?.lowercased() ?? ""
        let mediaType = header.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        return accepted.contains(mediaType)
    }

    /// A body may be read as JSON: it is empty (nothing to act on), or declared as one of `accepted`.
    static func accepts(_ request: Request, body: ByteBuffer, _ accepted: Set<String> = ["application/json"]) -> Bool {
        body.readableBytes == 0 || accepts(request, accepted)
    }
}
