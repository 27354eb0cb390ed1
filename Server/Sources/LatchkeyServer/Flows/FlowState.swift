import Foundation
import Logging

/// What a flow execution remembers between steps (persisted as JSON with the execution). Passwords and one-time
/// codes are never kept: a pending registration keeps the password's bcrypt hash, a sent code its keyed digest.
struct FlowState: Codable, Sendable {
    var applicationId: String
    var flowType: FlowType
    /// The prompt waiting for the client's next submission.
    var current: String
    /// Non-sensitive inputs collected so far, by identifier.
    var inputs: [String: String] = [:]
    var userId: String?
    /// Authentication methods completed (RFC 8176 values: `pwd`, `otp`).
    var amr: [String] = []
    var authTime: Date?
    /// Inputs an executor asked for at run time (registration's required attributes), shown with `current`.
    var dynamicInputs: [FlowInputSpec]?
    /// Data for the prompt about to be shown (emailSent, otpLength …).
    var additionalData: [String: String] = [:]
    var code: PendingCode?
    /// The code budget (`CodeBudget` key) the pending code's attempts are spent from.
    var codeBudget: String?
    var codeSends = 0
    var recoveryVerified = false
    var pendingPasswordHash: String?
    var invitationHash: Data?
    /// Failed second-factor attempts (TOTP) in this execution.
    var factorAttempts = 0
    /// The challenge of the passkey ceremony this execution started (a response to any other one is refused).
    var passkeyChallenge: String?
    /// Registration with a passkey: the id the new account will get (it is the passkey's user handle).
    var reservedUserId: String?
    /// Registration with a passkey: the verified credential, stored together with the account by provisioning.
    var pendingPasskey: PasskeyRecord?
    /// The execution's language (a `SupportedLocale` tag), chosen when it started: its messages, labels and
    /// emails stay in it unless a later request names another `locale` explicitly.
    var locale: String?
    /// A federated step under way: the provider and the authorization URL the `REDIRECTION` prompt shows.
    var federation: PendingFederation?

    struct PendingFederation: Codable, Sendable {
        var provider: String
        var redirectURL: String
    }

    struct PendingCode: Codable, Sendable {
        var digest: Data
        var expiresAt: Date
        var attempts: Int
    }
}

/// One request's worth of flow execution: the persisted state plus what only this request carries (sensitive
/// inputs, the caller's address and bearer token), and what the step produced.
struct FlowRun {
    var state: FlowState
    /// Everything submitted with this request (including passwords), by identifier: the current prompt's inputs only.
    var submitted: [String: String]
    /// The execution's id (its row is written after the first steps ran).
    let executionId: String
    /// The request's inputs as sent, before they are narrowed to the prompt's: an executor reads the few it takes
    /// from any step (the federated step's `redirect_uri`).
    let requestInputs: [String: String]
    let client: ClientConfiguration
    let clientAddress: String
    let bearerToken: String?
    /// The language of this request's messages.
    var locale: SupportedLocale = .en
    /// The request's logger (`context.logger`, with its request id).
    let logger: Logger
    /// Set by the assertion executor.
    var assertion: String?
    /// Shown with the prompt the run stops at.
    var error: FlowFailure?
    var fieldErrors: [FlowResponse.FieldError] = []

    /// A submitted value, else one collected earlier.
    func value(_ identifier: String) -> String? {
        if let v = submitted[identifier], !v.isEmpty { return v }
        return state.inputs[identifier]
    }
}

extension FlowRun {
    /// The flow's application, the caller's address and the request's logger, for the audit trail.
    var auditOrigin: AuditOrigin { AuditOrigin(client: client.clientId, address: clientAddress, logger: logger) }
}
