import Foundation
import LatchkeyJOSE

/// thunderID's `PasskeyAuthExecutor` (`thunderid-wire.md` §2.4), one executor with four modes (node property `mode`):
/// `challenge` → `additionalData.passkeyChallenge`, `verify` ← `credentialId, clientDataJSON, authenticatorData,
/// signature, userHandle`, `register_start` → `additionalData.passkeyCreationOptions`, `register_finish` ←
/// `credentialId, clientDataJSON, attestationObject, credentialName`. Options are W3C-named JSON strings; binary
/// inputs are base64url. Failures go back to `onFailure` (a fresh challenge) with FET-1015…1019.
struct PasskeyExecutors: Sendable {
    let accounts: Accounts
    let passkeys: Passkeys
    let store: any UserStore & PasskeyStore
    let clock: ServerClock

    func run(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        do {
            switch node.properties?["mode"] ?? "" {
            case "challenge": return try await challenge(&run)
            case "verify": return try await verify(node, &run)
            case "register_start": return try await registerStart(&run)
            case "register_finish": return try await registerFinish(&run)
            default: return .fail(.internalError)
            }
        } catch let failure as PasskeyFailure {
            run.logger.notice("flow passkey step refused", metadata: ["reason": .string(failure.description)])
            return .retry(failure.flowFailure)
        }
    }

    /// Discoverable when nobody is identified yet; bound to the user when the flow knows the user or the prompt
    /// collected a username, with `allowCredentials` only for a user the flow has authenticated. A typed username,
    /// known or not, gets discoverable options (no account enumeration, no credential ids).
    private func challenge(_ run: inout FlowRun) async throws -> ExecutorOutcome {
        var user: UserRecord?
        if let id = run.state.userId {
            user = try await store.user(id: id)
        } else if let name = run.value("username")?.trimmingCharacters(in: .whitespaces).nonEmpty {
            user = try await accounts.account(identifier: name)
        }
        // Credential ids only for a user the flow has authenticated, never for a typed name (no enumeration).
        let options = try await passkeys.beginPasskeyAuthentication(
            client: run.client, origin: nil, user: user,
            listCredentials: run.state.userId != nil)
        run.state.passkeyChallenge = options.challenge
        run.state.additionalData["passkeyChallenge"] = try PasskeyJSON.camelCaseString(options)
        return .next
    }

    private func verify(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        let response = PasskeyAssertionResponse(
            credentialId: try Self.binary(run, "credentialId"), clientDataJSON: try Self.binary(run, "clientDataJSON"),
            authenticatorData: try Self.binary(run, "authenticatorData"), signature: try Self.binary(run, "signature"),
            userHandle: run.submitted["userHandle"]?.nonEmpty.flatMap { Base64URL.decode($0) })
        try Self.checkChallenge(response.clientDataJSON, run)
        let result = try await passkeys.finishPasskeyAuthentication(response, origin: run.auditOrigin)
        guard result.clientId == run.state.applicationId else { throw PasskeyFailure.wrongCeremony }
        if let identified = run.state.userId, identified != result.user.id { throw PasskeyFailure.unknownCredential }
        run.state.userId = result.user.id
        run.state.amr = result.amr
        run.state.authTime = clock.now
        run.state.passkeyChallenge = nil
        return .next
    }

    /// An identified user adds a passkey (`registration` ceremony); a registration without an account yet reserves
    /// the account id, which becomes the passkey's user handle (`signup` ceremony).
    private func registerStart(_ run: inout FlowRun) async throws -> ExecutorOutcome {
        let options: PasskeyCreationOptions
        // An account named but not authenticated in this execution (a recovery step that only identified it) gets
        // no passkey: adding one is a credential change that needs the account's own sign-in.
        if run.state.userId != nil, run.state.authTime == nil { throw PasskeyFailure.wrongCeremony }
        if let id = run.state.userId, let user = try await store.user(id: id) {
            options = try await passkeys.beginPasskeyRegistration(user: user, client: run.client, origin: nil, friendlyName: nil)
        } else {
            let reserved = run.state.reservedUserId ?? UUID().uuidString.lowercased()
            run.state.reservedUserId = reserved
            let name = run.state.inputs["username"] ?? run.state.inputs["email"] ?? reserved
            options = try await passkeys.beginPasskeyCreationForNewAccount(
                client: run.client, userId: reserved, name: name, friendlyName: nil)
        }
        run.state.passkeyChallenge = options.challenge
        run.state.additionalData["passkeyCreationOptions"] = try PasskeyJSON.camelCaseString(options)
        return .next
    }

    private func registerFinish(_ run: inout FlowRun) async throws -> ExecutorOutcome {
        let response = PasskeyRegistrationResponse(
            credentialId: try Self.binary(run, "credentialId"),
            clientDataJSON: try Self.binary(run, "clientDataJSON"),
            attestationObject: try Self.binary(run, "attestationObject"))
        try Self.checkChallenge(response.clientDataJSON, run)
        let name = run.submitted["credentialName"]?.trimmingCharacters(in: .whitespacesAndNewlines).nonEmpty
        run.state.passkeyChallenge = nil
        if run.state.userId != nil, run.state.authTime == nil { throw PasskeyFailure.wrongCeremony }
        if let id = run.state.userId, let user = try await store.user(id: id) {
            let added = try await passkeys.finishPasskeyRegistration(
                user: user, response: response, friendlyName: name, origin: run.auditOrigin)
            await accounts.notifyAccountChange(
                user, "passkey_added", arguments: ["name": added.friendlyName], locale: run.locale, logger: run.logger)
            return .next
        }
        let (ceremony, verified) = try await passkeys.verifyPasskeyCreation(response, expecting: .signup, logger: run.logger)
        guard let reserved = run.state.reservedUserId, ceremony.userId == reserved, ceremony.clientId == run.state.applicationId else {
            throw PasskeyFailure.wrongCeremony
        }
        if try await store.passkey(id: Base64URL.encode(verified.credentialId)) != nil { throw PasskeyFailure.alreadyRegistered }
        run.state.pendingPasskey = passkeys.passkeyRecord(verified, userId: reserved, name: name, now: clock.now)
        return .next
    }

    private static func binary(_ run: FlowRun, _ name: String) throws -> Data {
        guard let text = run.submitted[name]?.nonEmpty, let data = Base64URL.decode(text) else {
            throw PasskeyFailure.malformed("\(name) is missing or not base64url")
        }
        return data
    }

    /// The response must answer the ceremony this execution started, not another one of the same application.
    private static func checkChallenge(_ clientDataJSON: Data, _ run: FlowRun) throws {
        guard let expected = run.state.passkeyChallenge, let data = try? ClientData(clientDataJSON),
            Base64URL.encode(data.challenge) == expected
        else { throw PasskeyFailure.challengeUnknownOrExpired }
    }
}
