import Foundation

/// Passkey steps inside thunderID flows (`PasskeyAuthExecutor`): a step whose `additionalData` carries
/// `passkeyChallenge` (request options, a JSON string) or `passkeyCreationOptions` (creation options) is answered with
/// the ceremony's result as flow `inputs`, all base64url:
/// - verify: `credentialId`, `clientDataJSON`, `authenticatorData`, `signature`, `userHandle` (when there is one);
/// - register_finish: `credentialId`, `clientDataJSON`, `attestationObject`, `credentialName` (when given).
public enum PasskeyFlowInputs {
    /// What passkey ceremony a flow step asks for, if any.
    public enum Ceremony: Sendable, Equatable {
        case assertion(PublicKeyCredentialRequestOptions)
        case registration(PublicKeyCredentialCreationOptions)
    }

    /// The ceremony `response` asks for; nil when the step has no passkey data.
    /// - Throws: `.serverError` when the options are present but malformed.
    public static func ceremony(in response: EmbeddedFlowResponse) throws -> Ceremony? {
        do {
            if let json = response.additionalData["passkeyCreationOptions"] {
                return .registration(try PublicKeyCredentialCreationOptions(jsonString: json, style: .w3c))
            }
            if let json = response.additionalData["passkeyChallenge"] {
                return .assertion(try PublicKeyCredentialRequestOptions(jsonString: json, style: .w3c))
            }
        } catch let error as LatchkeyError {
            throw LatchkeyError(.serverError, "the flow's passkey options are unusable: \(error.message)")
        }
        return nil
    }

    /// Runs the step's ceremony with `authenticator` and returns the inputs to submit.
    /// - Throws: `.invalidInput` when the step has no passkey data; the authenticator's errors.
    public static func inputs(
        for response: EmbeddedFlowResponse, authenticator: any PasskeyAuthenticator, origin: String,
        credentialName: String? = nil, mode: Mode = .Always, anchor: PresentationAnchorBox? = nil
    ) async throws -> [String: String] {
        switch try ceremony(in: response) {
        case .assertion(let options)?:
            return assertionInputs(try await authenticator.getAssertion(for: options, origin: origin, mode: mode, anchor: anchor))
        case .registration(let options)?:
            return registrationInputs(
                try await authenticator.createCredential(for: options, origin: origin, anchor: anchor), credentialName: credentialName)
        case nil:
            throw LatchkeyError(.invalidInput, "this flow step asks for no passkey (no passkeyChallenge or passkeyCreationOptions)")
        }
    }

    /// The verify step's inputs.
    public static func assertionInputs(_ assertion: AssertionCredential) -> [String: String] {
        var inputs = [
            "credentialId": assertion.id, "clientDataJSON": Base64URL.encode(assertion.clientDataJSON),
            "authenticatorData": Base64URL.encode(assertion.authenticatorData), "signature": Base64URL.encode(assertion.signature)
        ]
        if let handle = assertion.userHandle { inputs["userHandle"] = Base64URL.encode(handle) }
        return inputs
    }

    /// The register_finish step's inputs.
    public static func registrationInputs(_ credential: RegistrationCredential, credentialName: String?) -> [String: String] {
        var inputs = [
            "credentialId": credential.id, "clientDataJSON": Base64URL.encode(credential.clientDataJSON),
            "attestationObject": Base64URL.encode(credential.attestationObject)
        ]
        if let credentialName { inputs["credentialName"] = credentialName }
        return inputs
    }
}

extension LatchkeyClient {
    /// Answers a thunderID flow step that asks for a passkey, with the client's `passkeyAuthenticator`; submit the
    /// result as the next step's `inputs`.
    /// - Parameters:
    ///   - response: the step whose `additionalData` carries the passkey options.
    ///   - override: overrides the configured WebAuthn origin.
    ///   - credentialName: the name of a new passkey (registration steps).
    public func passkeyInputs(
        for response: EmbeddedFlowResponse, originWebAuthn override: String? = nil,
        credentialName: String? = nil
    ) async throws -> [String: String] {
        let origin = try originWebAuthn(overriddenBy: override)
        let authenticator = try resolvedAuthenticator()
        return try await ceremony {
            try await PasskeyFlowInputs.inputs(for: response, authenticator: authenticator, origin: origin, credentialName: credentialName)
        }
    }
}
