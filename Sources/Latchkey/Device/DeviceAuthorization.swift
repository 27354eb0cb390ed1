import Foundation

/// A device sign-in in progress (RFC 8628): show `userCode` and `verificationUri` (or `verificationUriComplete`, e.g.
/// as a QR code) to the person, then call ``DeviceAuthorizationFlow/resume(with:)`` (or
/// `LatchkeyClient.completeDeviceAuthorization(_:sessionId:)`), which polls until they allow it on another device.
public struct DeviceAuthorization: Sendable {
    /// The code the person types on the verification page (`BCDF-GHJK`).
    public var userCode: String
    /// The page where they type it.
    public var verificationUri: URL
    /// The page with the code filled in, when the provider offers one.
    public var verificationUriComplete: URL?
    /// When the code stops working.
    public var expiresAt: Date
    /// The polling interval the provider asked for, seconds.
    public var interval: Int
    /// The scopes asked for.
    public var scopes: [String]
    /// The device's secret: sent only to the token endpoint, never shown.
    let deviceCode: String
}

/// A sign-in for a device without a browser, or without a keyboard (a terminal, a TV, a build agent): the device
/// authorization grant (RFC 8628) into one ``LatchkeySession``.
///
/// ``start(scopes:)`` asks the provider's `device_authorization_endpoint` (from discovery) for a code pair; the app
/// shows the ``DeviceAuthorization``'s `userCode` and `verificationUri` to the person, who allows the sign-in on
/// another device; ``resume(with:)`` polls the token endpoint until they do, and stores the session.
///
/// ```swift
/// let flow = DeviceAuthorizationFlow(client: client, session: client.session(named: "tv"))
/// let authorization = try await flow.start()
/// print("Visit \(authorization.verificationUri) and enter \(authorization.userCode)")
/// let user = try await flow.resume(with: authorization)
/// ```
///
/// The ThunderID-style `startDeviceAuthorization(scopes:)` and `completeDeviceAuthorization(_:sessionId:)` of
/// ``LatchkeyClient`` are this flow.
public struct DeviceAuthorizationFlow: Sendable {
    /// The client whose provider, configuration and clock the flow uses.
    let client: LatchkeyClient
    /// Where ``resume(with:)`` stores the session once the sign-in is allowed.
    public let session: LatchkeySession

    /// A device sign-in into `session` (nil: the client's default session).
    public init(client: LatchkeyClient, session: LatchkeySession? = nil) {
        self.client = client
        self.session = session ?? client.session()
    }

    /// Asks the provider's `device_authorization_endpoint` (from discovery) for a code pair to show the person.
    /// - Parameter scopes: nil uses the configuration's.
    /// - Throws: `.invalidConfiguration` when the provider offers no device authorization, or the application may not
    ///   use it (`unauthorized_client`); `.networkError` when it cannot be reached; `.sdkNotInitialized`.
    public func start(scopes: [String]? = nil) async throws -> DeviceAuthorization {
        let context = try client.context()
        guard let endpoint = try await context.requireMetadata().deviceAuthorizationEndpoint else {
            throw LatchkeyError(.invalidConfiguration, "the provider offers no device authorization (no device_authorization_endpoint)")
        }
        let requested = scopes ?? context.config.scopes
        let response = try await context.http.send(
            .form(
                endpoint,
                [
                    ("client_id", context.config.clientId),
                    ("scope", requested.joined(separator: " "))
                ]))
        guard response.status == 200 else { throw OAuthClient.errorFrom(response) }
        struct Answer: Decodable {
            var device_code: String
            var user_code: String
            var verification_uri: String
            var verification_uri_complete: String?
            var expires_in: Int
            var interval: Int?
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: response.body), let verification = URL(string: answer.verification_uri) else {
            throw LatchkeyError(.serverError, "the device authorization answer is not the expected JSON", statusCode: response.status)
        }
        return DeviceAuthorization(
            userCode: answer.user_code, verificationUri: verification,
            verificationUriComplete: answer.verification_uri_complete.flatMap(URL.init(string:)),
            expiresAt: context.clock.deviceNow.addingTimeInterval(TimeInterval(answer.expires_in)),
            interval: max(1, answer.interval ?? 5), scopes: requested, deviceCode: answer.device_code)
    }

    /// Polls the token endpoint at the provider's interval (each `slow_down` adds five seconds, RFC 8628 §3.5) until
    /// the person allows the sign-in, then stores the tokens (verified ID token) in ``session`` and returns the user.
    /// Cancel the calling task to stop waiting. Any value of the client can resume an authorization any value started.
    /// - Throws: `.authenticationFailed` when they deny it (`access_denied`); `.sessionExpired` when the code expires
    ///   first (start again); `.canceled` when the task is cancelled; the token endpoint's other errors.
    public func resume(with authorization: DeviceAuthorization) async throws -> User {
        let context = try client.context()
        var interval = authorization.interval
        let key = try await context.newDPoPKeyReference()  // one key for every poll (a Secure Enclave key is not free)
        while true {
            do { try await context.clock.device.sleep(TimeInterval(interval)) } catch {
                throw LatchkeyError(.canceled, "the device sign-in was cancelled while waiting for approval", underlying: error)
            }
            guard context.clock.deviceNow < authorization.expiresAt else {
                throw LatchkeyError(.sessionExpired, "the device code expired before the sign-in was allowed; start again")
            }
            let response: TokenResponse
            do {
                response = try await context.tokenRequest(.deviceCode(authorization.deviceCode), proof: .stored(key))
            } catch let error where Task.isCancelled {
                // Cancelled during a poll rather than between two: the same answer as while waiting.
                throw LatchkeyError(.canceled, "the device sign-in was cancelled while waiting for approval", underlying: error)
            } catch let error as LatchkeyError {
                switch error.serverCode {
                case "authorization_pending": continue
                case "slow_down": interval += 5; continue
                case "expired_token":
                    throw LatchkeyError(
                        .sessionExpired, "the device code expired before the sign-in was allowed; start again",
                        statusCode: error.statusCode, serverCode: error.serverCode)
                default: throw error  // access_denied is already .authenticationFailed
                }
            }
            return try await client.loading {
                let tokens = try await context.signInTokens(
                    response, nonce: nil, maxAge: nil,
                    expectsIDToken: authorization.scopes.contains("openid"))
                try await context.tokens.replace(tokens, sessionId: session.name)
                return try await context.user(from: tokens)
            }
        }
    }
}

extension LatchkeyClient {
    /// Starts a sign-in for a device without a browser (a terminal, a TV, a build agent): asks the provider's
    /// `device_authorization_endpoint` (from discovery) for a code pair.
    /// - Parameter scopes: nil uses the configuration's.
    /// - Throws: `.invalidConfiguration` when the provider offers no device authorization, or the application may not
    ///   use it (`unauthorized_client`); `.networkError` when it cannot be reached.
    public func startDeviceAuthorization(scopes: [String]? = nil) async throws -> DeviceAuthorization {
        try await DeviceAuthorizationFlow(client: self).start(scopes: scopes)
    }

    /// Polls the token endpoint at the provider's interval (each `slow_down` adds five seconds, RFC 8628 §3.5) until
    /// the person allows the sign-in, then stores the session (verified ID token) and returns the user. Cancel the
    /// calling task to stop waiting.
    /// - Throws: `.authenticationFailed` when they deny it (`access_denied`); `.sessionExpired` when the code expires
    ///   first (start again); `.canceled` when the task is cancelled; the token endpoint's other errors.
    public func completeDeviceAuthorization(_ authorization: DeviceAuthorization, sessionId: String? = nil) async throws -> User {
        try await DeviceAuthorizationFlow(client: self, session: session(sessionId)).resume(with: authorization)
    }
}
