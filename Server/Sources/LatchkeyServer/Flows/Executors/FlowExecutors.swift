import Foundation

/// The executors a task node can name, each group holding only what its steps use. An executor reads and updates the
/// run and returns an outcome; none keeps state of its own, so executions survive restarts and can move between
/// server instances.
struct FlowExecutors: Sendable {
    typealias Executor = @Sendable (FlowNode, inout FlowRun) async throws -> ExecutorOutcome

    /// The names a graph's task node may give (`executor`), checked when a configured graph is read.
    enum Name: String, CaseIterable {
        case password = "PasswordAuthenticator"
        case secondFactor = "MFAResolver"
        case totp = "TOTPVerifier"
        case emailCodeSender = "EmailCodeSender"
        case emailCodeVerifier = "EmailCodeVerifier"
        case invitationGate = "InvitationGate"
        case invitationVerifier = "InvitationVerifier"
        case registrationCredentials = "RegistrationCredentials"
        case provisioning = "Provisioning"
        case passwordUpdater = "PasswordUpdater"
        case passkey = "PasskeyAuthExecutor"
        case assertion = "AuthAssertExecutor"
        case federated = "FederatedAuthExecutor"
        case sessionTerminator = "SessionTerminator"
    }

    let authentication: AuthenticationExecutors
    let codes: CodeExecutors
    let registration: RegistrationExecutors
    let recovery: RecoveryExecutors
    let passkeys: PasskeyExecutors
    let federation: FederationExecutors
    let sessions: SessionExecutors

    static var known: Set<String> { Set(Name.allCases.map(\.rawValue)) }

    /// The executor `name` names, if it is one.
    func executor(_ name: String) -> Executor? {
        guard let known = Name(rawValue: name) else { return nil }
        return switch known {
        case .password: authentication.password
        case .secondFactor: authentication.resolveSecondFactor
        case .totp: authentication.verifyTOTP
        case .emailCodeSender: codes.send
        case .emailCodeVerifier: codes.verify
        case .invitationGate: registration.invitationGate
        case .invitationVerifier: registration.verifyInvitation
        case .registrationCredentials: registration.credentials
        case .provisioning: registration.provision
        case .passwordUpdater: recovery.updatePassword
        case .passkey: passkeys.run
        case .assertion: sessions.assert
        case .federated: federation.run
        case .sessionTerminator: sessions.terminate
        }
    }
}
