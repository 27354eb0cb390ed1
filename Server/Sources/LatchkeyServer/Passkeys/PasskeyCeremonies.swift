import Crypto
import Foundation
import Logging
import LatchkeyJOSE
import X509

/// The server's passkey ceremonies, shared by the reachFive endpoints, the thunderID flow executor and the hosted
/// login page. Options are remembered server-side under the digest of their challenge (single use, short-lived);
/// the answer is matched to its ceremony by the challenge inside `clientDataJSON`, then verified by
/// `WebAuthnRelyingParty`.
/// The WebAuthn ceremonies (registration, sign-up, authentication) with their stored challenges, for the reachFive
/// passkey API and the flow steps alike.
struct Passkeys: Sendable {
    let webAuthn: WebAuthnSettings
    /// The configured issuer: the RP ID's fallback before the issuer in force is known.
    let configuredIssuer: URL
    let issuerInForce: @Sendable () -> String
    let lifetimes: TokenLifetimes
    let userSchema: UserSchema
    let store: any UserStore & PasskeyStore & ClientStore & FederatedIdentityStore
    let clock: ServerClock
    let metrics: ServerMetrics
    /// Passkeys added and removed, failed passkey sign-ins.
    let audit: AuditTrail

    private var issuer: String { issuerInForce() }

    /// The RP ID in force (`webauthn.rp_id`, else the issuer's host).
    var passkeyRpId: String {
        webAuthn.resolvedRpId(issuer: URL(string: issuer) ?? configuredIssuer)
    }

    /// The server's own origin (`scheme://host[:port]` of the issuer): what the `self` passkey origin stands for.
    var ownOrigin: String {
        guard let url = URL(string: issuer), let scheme = url.scheme, let host = url.host else { return issuer }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }

    func passkeyOrigins(of client: ClientConfiguration) -> Set<String> {
        Set(client.passkeyOrigins.map { $0 == "self" ? ownOrigin : $0 })
    }

    /// The origin the options were asked for; a flow ceremony (no stated origin) accepts any of the application's.
    private func allowedOrigins(_ ceremony: PasskeyChallengeRecord, _ client: ClientConfiguration) -> Set<String> {
        ceremony.origin.isEmpty ? passkeyOrigins(of: client) : [ceremony.origin]
    }

    /// The stable WebAuthn user handle of an account: its opaque id (never the email, WebAuthn §14.6.1).
    static func userHandle(_ userId: String) -> Data { Data(userId.utf8) }

    private func relyingParty(origins: Set<String>) throws -> WebAuthnRelyingParty {
        let anchors = try webAuthn.trustAnchorsDER.map { try Certificate(derEncoded: Array($0)) }
        var party = WebAuthnRelyingParty(rpId: passkeyRpId, allowedOrigins: origins, trustAnchors: anchors)
        party.requireTrustedAttestation = webAuthn.attestationRequired
        return party
    }

    private var userVerification: String { webAuthn.userVerification }

    private func checkedOrigin(_ origin: String?, client: ClientConfiguration) throws(PasskeyFailure) -> String {
        guard let origin else { return "" }  // flows: any of the application's origins
        guard passkeyOrigins(of: client).contains(origin) else { throw .originNotAllowed(origin) }
        return origin
    }

    private func newChallenge(
        _ ceremony: PasskeyChallengeRecord.Ceremony, clientId: String?, userId: String?, origin: String,
        profile: [String: String] = [:], friendlyName: String? = nil,
        allowed: [String] = [], userVerification: String? = nil
    ) async throws -> String {
        let challenge = Secrets.token(bytes: 32)
        let bytes = Base64URL.decode(challenge) ?? Data()
        let now = clock.now
        try await store.insertPasskeyChallenge(
            PasskeyChallengeRecord(
                challengeHash: Data(SHA256.hash(data: bytes)), ceremony: ceremony, clientId: clientId, userId: userId, profile: profile,
                friendlyName: friendlyName, origin: origin, userVerification: userVerification ?? self.userVerification, allowedCredentials: allowed,
                createdAt: now, expiresAt: now.addingTimeInterval(TimeInterval(lifetimes.passkeyChallenge))))
        return challenge
    }

    private func creationOptions(
        challenge: String, userId: String, name: String, displayName: String,
        exclude: [PasskeyRecord]
    ) -> PasskeyCreationOptions {
        PasskeyCreationOptions(
            rp: .init(id: passkeyRpId, name: webAuthn.rpName),
            user: .init(id: Base64URL.encode(Self.userHandle(userId)), name: name, displayName: displayName),
            challenge: challenge,
            pubKeyCredParams: [
                .init(alg: COSEAlgorithm.es256.rawValue), .init(alg: COSEAlgorithm.edDSA.rawValue),
                .init(alg: COSEAlgorithm.rs256.rawValue)
            ],
            timeout: lifetimes.passkeyChallenge * 1000,
            excludeCredentials: exclude.map { PasskeyDescriptor(id: $0.id) },
            authenticatorSelection: .init(residentKey: "required", requireResidentKey: true, userVerification: userVerification),
            attestation: webAuthn.trustAnchorsDER.isEmpty ? "none" : "direct")
    }

    // MARK: Sign-up (new account + first passkey)

    /// reachFive `signup-options`: checks the profile, reserves the new account's id and returns creation options.
    func beginPasskeySignup(
        client: ClientConfiguration, origin: String?, friendlyName: String?,
        profile: [String: String]
    ) async throws -> PasskeyCreationOptions {
        let origin = try checkedOrigin(origin, client: client)
        guard client.registration == .open else { throw FlowFailure.registrationDisabled.apiError }
        let profile = try await checkedSignupProfile(profile)
        let userId = UUID().uuidString.lowercased()
        let name = profile["email"] ?? profile["phone_number"] ?? profile["username"] ?? userId
        let challenge = try await newChallenge(
            .signup, clientId: client.clientId, userId: userId, origin: origin, profile: profile,
            friendlyName: friendlyName)
        return creationOptions(
            challenge: challenge, userId: userId, name: name,
            displayName: profile["name"] ?? [profile["given_name"], profile["family_name"]].compactMap { $0 }.joined(separator: " ").nonEmpty ?? name,
            exclude: [])
    }

    private func checkedSignupProfile(_ raw: [String: String]) async throws -> [String: String] {
        var profile = raw.filter { !$0.value.isEmpty }
        if let email = profile["email"] { profile["email"] = email.trimmingCharacters(in: .whitespaces) }
        let schema = userSchema
        var problems: [UserSchema.Problem] = []
        for (name, value) in profile where name != "custom_identifier" {
            if let problem = schema.problem(name, value) { problems.append(problem) }
        }
        guard problems.isEmpty else { throw PasskeyFailure.invalidProfile(problems.sorted { $0.attribute < $1.attribute }) }
        guard let identifier = profile["email"] ?? profile["phone_number"] else { throw PasskeyFailure.identifierRequired }
        if schema.attribute("email")?.required == true, profile["email"] == nil { throw PasskeyFailure.identifierRequired }
        let field = profile["email"] != nil ? "email" : "phone_number"
        let takenAsUsername = try await store.user(username: identifier) != nil
        let takenAsClaim = try await !store.users(claim: field, equals: identifier).isEmpty
        if takenAsUsername || takenAsClaim {
            throw PasskeyFailure.identifierTaken(field: field)
        }
        if let username = profile["username"], try await store.user(username: username) != nil {
            throw PasskeyFailure.identifierTaken(field: "username")
        }
        return profile
    }

    /// reachFive `signup`: verifies the attestation and creates the account with its passkey (one transaction).
    func finishPasskeySignup(webauthnId: String, response: PasskeyRegistrationResponse, logger: Logger) async throws -> (UserRecord, clientId: String)
    {
        let (ceremony, verified) = try await verifyPasskeyCreation(response, expecting: .signup, logger: logger)
        guard let userId = ceremony.userId, let clientId = ceremony.clientId,
            Base64URL.decode(webauthnId).map({ Secrets.constantTimeEquals($0, Self.userHandle(userId)) }) == true
        else {
            throw PasskeyFailure.wrongCeremony
        }
        let profile = ceremony.profile
        let username = profile["username"] ?? profile["email"] ?? profile["phone_number"] ?? userId
        var claims = profile.filter { $0.key != "username" && $0.key != "custom_identifier" }
        if claims["name"] == nil, let full = [claims["given_name"], claims["family_name"]].compactMap({ $0 }).joined(separator: " ").nonEmpty {
            claims["name"] = full
        }
        let now = clock.now
        let user = UserRecord(
            id: userId, username: username, passwordHash: PasswordHasher.noPassword, claims: claims, disabled: false,
            failedLogins: 0, lockedUntil: nil, createdAt: now)
        do {
            try await store.insertUser(user, withPasskey: passkeyRecord(verified, userId: userId, name: ceremony.friendlyName, now: now))
        } catch StoreError.conflict(let what) {
            throw what == "passkey"
                ? PasskeyFailure.alreadyRegistered : PasskeyFailure.identifierTaken(field: profile["email"] != nil ? "email" : "phone_number")
        }
        logger.info("account created with a passkey", metadata: ["user": .string(userId), "client": .string(clientId)])
        return (user, clientId)
    }

    /// Creation options for an account that does not exist yet (a sign-up flow): `userId` is the id the account will
    /// get when the flow provisions it.
    func beginPasskeyCreationForNewAccount(client: ClientConfiguration, userId: String, name: String, friendlyName: String?) async throws
        -> PasskeyCreationOptions
    {
        let challenge = try await newChallenge(.signup, clientId: client.clientId, userId: userId, origin: "", friendlyName: friendlyName)
        return creationOptions(challenge: challenge, userId: userId, name: name, displayName: name, exclude: [])
    }

    /// Finds the ceremony a registration response answers and verifies the attestation against it.
    func verifyPasskeyCreation(
        _ response: PasskeyRegistrationResponse,
        expecting kind: PasskeyChallengeRecord.Ceremony, logger: Logger
    ) async throws -> (PasskeyChallengeRecord, VerifiedRegistration) {
        let (ceremony, clientData) = try await takeCeremony(response.clientDataJSON, expecting: kind)
        guard let clientId = ceremony.clientId, let client = try await store.client(id: clientId)?.configuration else {
            throw PasskeyFailure.wrongCeremony
        }
        return (ceremony, try await verifyRegistration(response, clientData: clientData, ceremony: ceremony, client: client, logger: logger))
    }

    // MARK: Registration (another passkey for a signed-in account)

    func beginPasskeyRegistration(user: UserRecord, client: ClientConfiguration, origin: String?, friendlyName: String?) async throws
        -> PasskeyCreationOptions
    {
        let origin = try checkedOrigin(origin, client: client)
        let existing = try await store.passkeys(userId: user.id)
        let challenge = try await newChallenge(.registration, clientId: client.clientId, userId: user.id, origin: origin, friendlyName: friendlyName)
        return creationOptions(
            challenge: challenge, userId: user.id, name: user.username,
            displayName: user.claims["name"] ?? user.username, exclude: existing)
    }

    /// - Parameter how: how the passkey came to be added, recorded in the audit event's `how`.
    @discardableResult
    func finishPasskeyRegistration(
        user: UserRecord, response: PasskeyRegistrationResponse, friendlyName: String? = nil, how: PasskeyAddition = .request,
        origin: AuditOrigin
    ) async throws -> PasskeyRecord {
        let logger = origin.logger
        let (ceremony, verified) = try await verifyPasskeyCreation(response, expecting: .registration, logger: logger)
        guard ceremony.userId == user.id else { throw PasskeyFailure.wrongCeremony }
        let record = passkeyRecord(verified, userId: user.id, name: friendlyName ?? ceremony.friendlyName, now: clock.now)
        do { try await store.insertPasskey(record) } catch StoreError.conflict { throw PasskeyFailure.alreadyRegistered }
        logger.info("passkey added", metadata: ["user": .string(user.id)])
        await audit.record(.passkeyAdded, subject: user.id, details: ["credential": record.id, "how": how.rawValue], origin: origin)
        return record
    }

    private func verifyRegistration(
        _ response: PasskeyRegistrationResponse, clientData: ClientData, ceremony: PasskeyChallengeRecord,
        client: ClientConfiguration, logger: Logger
    ) async throws -> VerifiedRegistration {
        let origins = allowedOrigins(ceremony, client)
        do {
            let verified = try await relyingParty(origins: origins).verifyRegistration(
                clientDataJSON: response.clientDataJSON, attestationObject: response.attestationObject,
                expectedChallenge: clientData.challenge, requireUserVerification: ceremony.userVerification == "required",
                now: clock.now)
            guard verified.credentialId == response.credentialId else {
                throw PasskeyFailure.malformed("id does not match the attested credential id")
            }
            return verified
        } catch let error as WebAuthnError {
            logger.notice("passkey registration refused", metadata: ["reason": .string(error.description)])
            throw PasskeyFailure.verification(error)
        }
    }

    func passkeyRecord(_ v: VerifiedRegistration, userId: String, name: String?, now: Date) -> PasskeyRecord {
        PasskeyRecord(
            id: Base64URL.encode(v.credentialId), userId: userId, publicKey: v.publicKeyCOSE, algorithm: v.algorithm.rawValue,
            signCount: v.signCount, aaguid: v.aaguid, friendlyName: (name?.nonEmpty ?? "Passkey").prefix(100).description,
            attestationFormat: v.format, backupEligible: v.backupEligible, backedUp: v.backedUp, createdAt: now, lastUsedAt: nil)
    }

    // MARK: Authentication

    /// Options for a sign-in: discoverable (no user: empty `allowCredentials`) or username-first (the user's passkeys).
    /// An unknown username gets discoverable-looking options too, so the answer does not reveal which accounts exist.
    ///
    /// `listCredentials` is for a user the caller has already authenticated. A user named by whoever asks (a typed
    /// username or email) gets the same options as an unknown name, with no credential ids: listing them would tell
    /// anyone which accounts exist and hand out the ids of their passkeys. The ceremony is still bound to that user
    /// and their passkeys, so only one of them can answer it; every passkey is discoverable (`residentKey`
    /// required), so the authenticator finds it without the list.
    func beginPasskeyAuthentication(
        client: ClientConfiguration, origin: String?, user: UserRecord?,
        listCredentials: Bool = false
    ) async throws -> PasskeyRequestOptions {
        let origin = try checkedOrigin(origin, client: client)
        var ids: [String] = []
        if let user { ids = try await store.passkeys(userId: user.id).map(\.id) }
        // An application that requires MFA accepts a passkey only as two factors: the authenticator must verify the
        // user (PIN or biometric), and the response is refused without the UV flag.
        let uv = client.requireMFA ? "required" : userVerification
        let challenge = try await newChallenge(
            .authentication, clientId: client.clientId, userId: user?.id, origin: origin, allowed: ids,
            userVerification: uv)
        let listed = listCredentials ? ids : []
        return PasskeyRequestOptions(
            challenge: challenge, timeout: lifetimes.passkeyChallenge * 1000, rpId: passkeyRpId,
            allowCredentials: listed.map { PasskeyDescriptor(id: $0) }, userVerification: uv)
    }

    /// Verifies an assertion and returns the signed-in user and the application the ceremony was started for.
    /// `amr` is the sign-in's RFC 8176 methods (`AuthenticationMethods.passkey`): multi-factor only when the
    /// authenticator verified the user.
    /// A failure is audited here (`signin.failed`, method `passkey`); the success when the sign-in's session opens.
    func finishPasskeyAuthentication(_ response: PasskeyAssertionResponse, origin: AuditOrigin) async throws
        -> (user: UserRecord, clientId: String, passkey: PasskeyRecord, amr: [String])
    {
        do {
            let result = try await verifyPasskeyAuthentication(response, logger: origin.logger)
            metrics.signIn(.passkey, .success)
            return result
        } catch let failure as PasskeyFailure {
            metrics.signIn(.passkey, .failure)
            await audit.record(
                .signInFailed, .failure, subject: nil,
                details: ["method": "passkey", "reason": failure.auditReason], origin: origin)
            throw failure
        }
    }

    private func verifyPasskeyAuthentication(_ response: PasskeyAssertionResponse, logger: Logger) async throws
        -> (user: UserRecord, clientId: String, passkey: PasskeyRecord, amr: [String])
    {
        let (ceremony, clientData) = try await takeCeremony(response.clientDataJSON, expecting: .authentication)
        guard let clientId = ceremony.clientId, let client = try await store.client(id: clientId)?.configuration else {
            throw PasskeyFailure.wrongCeremony
        }
        let credentialId = Base64URL.encode(response.credentialId)
        guard let passkey = try await store.passkey(id: credentialId) else { throw PasskeyFailure.unknownCredential }
        if !ceremony.allowedCredentials.isEmpty, !ceremony.allowedCredentials.contains(credentialId) { throw PasskeyFailure.unknownCredential }
        if let expectedUser = ceremony.userId, expectedUser != passkey.userId { throw PasskeyFailure.unknownCredential }
        if let handle = response.userHandle, !handle.isEmpty, !Secrets.constantTimeEquals(handle, Self.userHandle(passkey.userId)) {
            throw PasskeyFailure.userHandleMismatch
        }
        let origins = allowedOrigins(ceremony, client)
        let verified: VerifiedAssertion
        do {
            verified = try relyingParty(origins: origins).verifyAssertion(
                credentialId: response.credentialId, clientDataJSON: response.clientDataJSON, authenticatorData: response.authenticatorData,
                signature: response.signature, userHandle: response.userHandle, expectedChallenge: clientData.challenge,
                publicKeyCOSE: passkey.publicKey, storedSignCount: passkey.signCount,
                requireUserVerification: ceremony.userVerification == "required")
        } catch let error as WebAuthnError {
            logger.notice("passkey assertion refused", metadata: ["reason": .string(error.description), "user": .string(passkey.userId)])
            throw PasskeyFailure.verification(error)
        }
        guard
            try await store.recordPasskeyUse(
                id: passkey.id, previousSignCount: passkey.signCount, signCount: verified.newSignCount,
                backedUp: verified.backedUp, now: clock.now)
        else {
            // Another sign-in with this credential stored its counter first: treat like a regression (possible clone).
            throw PasskeyFailure.verification(.signCountRegression(stored: passkey.signCount, received: verified.newSignCount))
        }
        guard let user = try await store.user(id: passkey.userId) else { throw PasskeyFailure.unknownCredential }
        guard !user.disabled else { throw PasskeyFailure.accountDisabled }
        return (user, clientId, passkey, AuthenticationMethods.passkey(userVerified: verified.userVerified, backupEligible: passkey.backupEligible))
    }

    /// Finds (and consumes) the ceremony a response answers, by the challenge in its client data.
    private func takeCeremony(_ clientDataJSON: Data, expecting kind: PasskeyChallengeRecord.Ceremony) async throws -> (
        PasskeyChallengeRecord, ClientData
    ) {
        let clientData: ClientData
        do { clientData = try ClientData(clientDataJSON) } catch let error as WebAuthnError {
            throw PasskeyFailure.verification(error)
        } catch {
            throw PasskeyFailure.malformed("clientDataJSON is not valid")
        }
        let now = clock.now
        guard let ceremony = try await store.takePasskeyChallenge(hash: Data(SHA256.hash(data: clientData.challenge)), now: now),
            ceremony.expiresAt > now
        else { throw PasskeyFailure.challengeUnknownOrExpired }
        guard ceremony.ceremony == kind else { throw PasskeyFailure.wrongCeremony }
        return (ceremony, clientData)
    }

    // MARK: Management

    func renamePasskey(id: String, of user: UserRecord, to name: String) async throws -> PasskeyRecord {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.count <= 100 else { throw PasskeyFailure.malformed("friendly_name must be 1 to 100 characters") }
        guard try await store.renamePasskey(id: id, userId: user.id, friendlyName: trimmed),
            let updated = try await store.passkey(id: id)
        else { throw PasskeyFailure.notFound }
        return updated
    }

    /// Deletes the account's passkey `id`: the passkey it was (for the notice that names it). The account's last way
    /// to sign in stays (`lastCredential`), as its last linked provider does (`FederatedAccounts.unlink`): a
    /// passwordless account would otherwise be locked out by one click.
    @discardableResult
    func deletePasskey(id: String, of user: UserRecord, origin: AuditOrigin) async throws -> PasskeyRecord {
        guard let passkey = try await store.passkey(id: id), passkey.userId == user.id else { throw PasskeyFailure.notFound }
        let stored = try await store.user(id: user.id) ?? user
        let hasPassword = stored.passwordHash != PasswordHasher.noPassword
        if !hasPassword, try await store.passkeys(userId: user.id).count == 1, try await store.federatedIdentities(userId: user.id).isEmpty {
            throw PasskeyFailure.lastCredential
        }
        guard try await store.deletePasskey(id: id, userId: user.id) else { throw PasskeyFailure.notFound }
        origin.logger.info("passkey deleted", metadata: ["user": .string(user.id)])
        await audit.record(.passkeyRemoved, subject: user.id, details: ["credential": id], origin: origin)
        return passkey
    }
}

extension String {
    /// Nil for the empty string, so `??` chains can skip it.
    var nonEmpty: String? { isEmpty ? nil : self }
}
