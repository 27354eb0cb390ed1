import Foundation
import Hummingbird

/// `POST /identity/v1/native-nonce` (`{client_id}` → `{nonce, expires_in}`): the nonce a native provider sign-in
/// (Sign in with Apple, Google Sign-In) must use, issued by the server so that the upstream ID token proves a fresh
/// sign-in for this application (`NativeSignInNonces`, security review 3, R3-3). The app gives the provider's SDK
/// the nonce (Google) or its base64url SHA-256 (Apple), and sends the nonce itself with the token to
/// `/oauth/authorize`. The application's native sign-in policy applies here as on every native front door.
struct NativeNonceController: Sendable {
    let store: any ClientStore
    let nonces: NativeSignInNonces
    let admission: Admission
    let nativeSignIn: NativeSignInPolicy

    func addRoutes(to identity: RouterGroup<LatchkeyRequestContext>) {
        // Counted with the other challenges per address: issuing writes nothing, but each nonce is a sign-in start.
        identity.post("native-nonce") { request, context in
            try await admission.admitChallenge(address: context.clientAddress)
            return try await self.issue(request)
        }
    }

    private func issue(_ request: Request) async throws -> Response {
        struct Body: Encodable {
            var nonce: String
            var expiresIn: Int
            enum CodingKeys: String, CodingKey { case nonce, expiresIn = "expires_in" }
        }
        let body = try await ReachFiveBody.read(request)
        guard let client = try await store.client(id: try body.required("client_id"))?.configuration else {
            throw ReachFiveBody.invalid("unknown client_id")
        }
        try nativeSignIn.requireNativeSignInAllowed(client: client, attestation: request.headers[.attestationToken])
        let issued = nonces.issue(clientId: client.clientId)
        return try Responses.json(Body(nonce: issued.nonce, expiresIn: issued.expiresIn), noStore: true)
    }
}
