import Foundation

/// The executors a task node can name. Each reads and updates the run and returns an outcome; none keeps state
/// of its own, so executions survive restarts and can move between server instances.
enum FlowExecutors {
    typealias Executor = @Sendable (FlowServices, FlowNode, inout FlowRun) async throws -> ExecutorOutcome

    private static let registry: [String: Executor] = [
        "PasswordAuthenticator": AuthenticationExecutors.password,
        "MFAResolver": AuthenticationExecutors.resolveSecondFactor,
        "TOTPVerifier": AuthenticationExecutors.verifyTOTP,
        "EmailCodeSender": CodeExecutors.send,
        "EmailCodeVerifier": CodeExecutors.verify,
        "InvitationGate": RegistrationExecutors.invitationGate,
        "InvitationVerifier": RegistrationExecutors.verifyInvitation,
        "RegistrationCredentials": RegistrationExecutors.credentials,
        "Provisioning": RegistrationExecutors.provision,
        "PasswordUpdater": RecoveryExecutors.updatePassword,
        "PasskeyAuthExecutor": PasskeyExecutors.run,
        "AuthAssertExecutor": SessionExecutors.assert,
        "FederatedAuthExecutor": FederationExecutors.run,
        "SessionTerminator": SessionExecutors.terminate
    ]

    static var known: Set<String> { Set(registry.keys) }
    static func executor(_ name: String) -> Executor? { registry[name] }
}
