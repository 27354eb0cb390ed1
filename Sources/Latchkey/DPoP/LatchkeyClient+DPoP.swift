import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE

/// Calling your own APIs with the session's access token, Bearer or DPoP-bound alike.
extension LatchkeyClient {
    /// Where this client's sessions get their DPoP keys when `LatchkeyConfig.dpopKeyProvider` is nil (set before
    /// `initialize`): software P-256 keys by default; the Apple client sets the Secure Enclave.
    public var defaultDPoPKeys: (any DPoPKeyProvider)? {
        get { defaultDPoPKeyProvider.withLock { $0 } }
        set { defaultDPoPKeyProvider.withLock { $0 = newValue } }
    }

    /// The headers that authorize a request to your API with the session's access token (refreshed first if due):
    /// `Authorization: Bearer …`, or for a DPoP-bound session (`LatchkeyConfig.useDPoP`) `Authorization: DPoP …` and a
    /// `DPoP` proof made for exactly this method and URL — make a new set for every request.
    /// - Throws: `.sessionExpired` when not signed in or the session ended; `.invalidToken` when the stored key is gone.
    public func authorizationHeaders(method: String, url: URL, sessionId: String? = nil) async throws -> [String: String] {
        try await session(sessionId).authorizationHeaders(method: method, url: url)
    }

    /// Sends `request` to your API with the session's access token (see `authorizationHeaders(method:url:sessionId:)`)
    /// through the client's HTTP seam; a server that asks for a DPoP nonce (`use_dpop_nonce`) gets one retry with it.
    public func sendAuthorized(_ request: HTTPRequest, sessionId: String? = nil) async throws -> HTTPResponse {
        try await session(sessionId).sendAuthorized(request)
    }
}
