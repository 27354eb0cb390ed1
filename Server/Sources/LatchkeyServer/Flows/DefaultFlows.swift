import Foundation
import LatchkeyJOSE

/// The built-in flows every application gets unless it brings its own. Labels are `{{ t(namespace:key) }}`
/// templates filled from `GET /flow/meta` translations (`FlowTexts`).
public enum DefaultFlows {
    public static func graph(_ type: FlowType) -> FlowGraph { graph(type, offering: []) }

    /// The built-in flow of `type`; an AUTHENTICATION flow offers each of `providers` beside the password and the
    /// passkey (`authentication(offering:)`).
    static func graph(_ type: FlowType, offering providers: [IdentityProviderConfiguration]) -> FlowGraph {
        switch type {
        case .authentication: providers.isEmpty ? authentication : authentication(offering: providers)
        case .registration: registration
        case .recovery: recovery
        case .signOut: signOut
        }
    }

    static let passwordRules = [
        FlowValidationRule(
            type: "minLength", value: .number(Double(PasswordPolicy.minimumLength)),
            message: "The password must be at least \(PasswordPolicy.minimumLength) characters",
            key: "validation.password.minLength.invalid")
    ]

    // MARK: AUTHENTICATION: identify + password, then TOTP or an emailed code when enrolled, then the assertion.

    public static let authentication = FlowGraph(
        id: "default-authentication", type: .authentication,
        nodes: [
            FlowNode(id: "start", kind: .start, next: "prompt_credentials"),
            prompt(
                "prompt_credentials", title: "signin:forms.credentials.title",
                inputs: [
                    FlowInputSpec(ref: "input_001", identifier: "username", type: "TEXT_INPUT"),
                    FlowInputSpec(ref: "input_002", identifier: "password", type: "PASSWORD_INPUT")
                ],
                labels: ["username": "signin:forms.credentials.username.label", "password": "signin:forms.credentials.password.label"],
                actions: [
                    (FlowActionSpec(ref: "action_001", next: "password_auth", type: "SUBMIT"), "signin:forms.credentials.submit.label"),
                    (
                        FlowActionSpec(ref: "action_passkey", next: "passkey_challenge", type: "PASSKEY", validates: false),
                        "signin:forms.credentials.passkey.label"
                    )
                ]),
            // Passkey: discoverable, or username-first when a username was typed before choosing the passkey action. It
            // goes on to `mfa_resolve` as a password does: a passkey without user verification is one factor.
            FlowNode(
                id: "passkey_challenge", kind: .task, executor: "PasskeyAuthExecutor", properties: ["mode": "challenge"], next: "prompt_passkey"),
            prompt(
                "prompt_passkey", title: "signin:forms.passkey.title", inputs: assertionInputs, labels: [:],
                actions: [(FlowActionSpec(ref: "action_assertion", next: "passkey_verify", type: "SUBMIT"), "signin:forms.passkey.submit.label")]),
            FlowNode(
                id: "passkey_verify", kind: .task, executor: "PasskeyAuthExecutor", properties: ["mode": "verify"], next: "mfa_resolve",
                onFailure: "passkey_challenge"),
            FlowNode(id: "password_auth", kind: .task, executor: "PasswordAuthenticator", next: "mfa_resolve", onFailure: "prompt_credentials"),
            FlowNode(
                id: "mfa_resolve", kind: .task, executor: "MFAResolver",
                branches: ["totp": "prompt_totp", "email_otp": "send_email_otp", "none": "assert"]),
            prompt(
                "prompt_totp", title: "signin:forms.totp.title",
                inputs: [
                    FlowInputSpec(
                        ref: "input_otp", identifier: "otp", type: "OTP_INPUT",
                        // Six digits, or a recovery code (`RecoveryCodes`: ten letters and digits, any case, with a
                        // hyphen or spaces), which stands in for the authenticator.
                        validation: [
                            FlowValidationRule(
                                type: "regex", value: .string("^([0-9 ]{6,7}|[0-9A-Za-z -]{10,14})$"), message: "Enter the 6-digit code",
                                key: "validation.otp_format")
                        ])
                ],
                labels: ["otp": "signin:forms.totp.otp.label"],
                actions: [(FlowActionSpec(ref: "action_totp", next: "verify_totp", type: "SUBMIT"), "signin:forms.totp.submit.label")]),
            FlowNode(id: "verify_totp", kind: .task, executor: "TOTPVerifier", next: "assert", onFailure: "prompt_totp"),
            FlowNode(id: "send_email_otp", kind: .task, executor: "EmailCodeSender", properties: ["purpose": "mfa"], next: "prompt_email_otp"),
            prompt(
                "prompt_email_otp", title: "signin:forms.email_otp.title",
                inputs: [FlowInputSpec(ref: "input_otp", identifier: "otp", type: "OTP_INPUT")],
                labels: ["otp": "signin:forms.email_otp.otp.label"],
                actions: [
                    (FlowActionSpec(ref: "action_email_otp", next: "verify_email_otp", type: "SUBMIT"), "signin:forms.email_otp.submit.label"),
                    (
                        FlowActionSpec(ref: "action_resend", next: "send_email_otp", type: "RESEND", validates: false),
                        "signin:forms.email_otp.resend.label"
                    )
                ]),
            FlowNode(
                id: "verify_email_otp", kind: .task, executor: "EmailCodeVerifier", properties: ["purpose": "mfa"], next: "assert",
                onFailure: "prompt_email_otp"),
            FlowNode(id: "assert", kind: .task, executor: "AuthAssertExecutor", next: "end"),
            FlowNode(id: "end", kind: .end)
        ])

    /// The AUTHENTICATION flow with "Continue with …" actions (type `FEDERATED`, labelled with the provider's name) on
    /// its first prompt: each starts that provider's leg and stops at a `REDIRECTION` prompt whose `code` and `state`
    /// (what came back to the app) finish it; then the account's second factor, as after a password.
    static func authentication(offering providers: [IdentityProviderConfiguration]) -> FlowGraph {
        var graph = authentication
        guard let index = graph.nodes.firstIndex(where: { $0.id == "prompt_credentials" }) else { return graph }
        var prompt = graph.nodes[index]
        for provider in providers {
            let ref = "action_idp_\(provider.id)"
            prompt.actions?.append(FlowActionSpec(ref: ref, next: "idp_\(provider.id)_start", type: "FEDERATED", validates: false))
            // The label is the provider's name (a proper noun), not a catalog template.
            let button = component(
                ref, type: "ACTION",
                extra: ["variant": .string("SECONDARY"), "eventType": .string("TRIGGER"), "label": .string(provider.name)])
            prompt.components = prompt.components?.map { component in
                guard case .object(var block) = component, block["type"]?.stringValue == "BLOCK", case .array(let children) = block["components"]
                else { return component }
                block["components"] = .array(children + [button])
                return .object(block)
            }
            graph.nodes.append(
                FlowNode(
                    id: "idp_\(provider.id)_start", kind: .task, executor: "FederatedAuthExecutor",
                    properties: ["mode": "start", "idp": provider.id], next: "prompt_idp", onFailure: "prompt_credentials"))
        }
        graph.nodes[index] = prompt
        var redirection = Self.prompt(
            "prompt_idp", title: "signin:forms.federated.title",
            inputs: [
                FlowInputSpec(ref: "input_idp_code", identifier: "code", type: "OTP_INPUT"),
                FlowInputSpec(ref: "input_idp_state", identifier: "state", type: "TEXT_INPUT")
            ],
            labels: [:],
            actions: [(FlowActionSpec(ref: "action_idp_continue", next: "idp_finish", type: "SUBMIT"), "signin:forms.federated.submit.label")])
        redirection.properties = ["type": "REDIRECTION"]
        graph.nodes.append(redirection)
        graph.nodes.append(
            FlowNode(
                id: "idp_finish", kind: .task, executor: "FederatedAuthExecutor", properties: ["mode": "finish"], next: "mfa_resolve",
                onFailure: "prompt_credentials"))
        return graph
    }

    // MARK: REGISTRATION: (invitation) → username + password → required attributes → account → assertion.

    public static let registration = FlowGraph(
        id: "default-registration", type: .registration,
        nodes: [
            FlowNode(id: "start", kind: .start, next: "invitation_gate"),
            FlowNode(
                id: "invitation_gate", kind: .task, executor: "InvitationGate",
                branches: ["required": "prompt_invitation", "open": "prompt_credentials"]),
            prompt(
                "prompt_invitation", title: "signup:forms.invitation.title",
                inputs: [FlowInputSpec(ref: "input_invitation", identifier: "invitationCode", type: "TEXT_INPUT")],
                labels: ["invitationCode": "signup:forms.invitation.code.label"],
                actions: [
                    (FlowActionSpec(ref: "action_invitation", next: "verify_invitation", type: "SUBMIT"), "signup:forms.invitation.submit.label")
                ]),
            FlowNode(
                id: "verify_invitation", kind: .task, executor: "InvitationVerifier", next: "prompt_credentials", onFailure: "prompt_invitation"),
            prompt(
                "prompt_credentials", title: "signup:forms.credentials.title",
                inputs: [
                    FlowInputSpec(
                        ref: "input_001", identifier: "username", type: "TEXT_INPUT",
                        validation: [FlowValidationRule(type: "maxLength", value: .number(128))]),
                    FlowInputSpec(ref: "input_002", identifier: "password", type: "PASSWORD_INPUT", validation: passwordRules)
                ],
                labels: ["username": "signup:forms.credentials.username.label", "password": "signup:forms.credentials.password.label"],
                actions: [
                    (
                        FlowActionSpec(ref: "action_credentials", next: "register_credentials", type: "SUBMIT"),
                        "signup:forms.credentials.submit.label"
                    ),
                    (
                        FlowActionSpec(ref: "action_passkey", next: "register_passkey_credentials", type: "PASSKEY", validates: false),
                        "signup:forms.credentials.passkey.label"
                    )
                ]),
            FlowNode(
                id: "register_credentials", kind: .task, executor: "RegistrationCredentials", next: "provision", onFailure: "prompt_credentials"),
            // Passkey instead of a password: username, then the passkey, then the attributes; the account and its passkey
            // are created together by provisioning.
            FlowNode(
                id: "register_passkey_credentials", kind: .task, executor: "RegistrationCredentials", properties: ["credential": "passkey"],
                next: "passkey_register_start", onFailure: "prompt_credentials"),
            FlowNode(
                id: "passkey_register_start", kind: .task, executor: "PasskeyAuthExecutor", properties: ["mode": "register_start"],
                next: "prompt_passkey_registration"),
            prompt(
                "prompt_passkey_registration", title: "signup:forms.passkey.title", inputs: registrationInputs, labels: [:],
                actions: [
                    (
                        FlowActionSpec(ref: "action_register_passkey", next: "passkey_register_finish", type: "SUBMIT"),
                        "signup:forms.passkey.submit.label"
                    )
                ]),
            FlowNode(
                id: "passkey_register_finish", kind: .task, executor: "PasskeyAuthExecutor", properties: ["mode": "register_finish"],
                next: "provision", onFailure: "passkey_register_start"),
            FlowNode(
                id: "provision", kind: .task, executor: "Provisioning", next: "assert", onFailure: "prompt_credentials",
                onIncomplete: "prompt_attributes"),
            prompt(
                "prompt_attributes", title: "signup:forms.attributes.title", inputs: [], labels: [:],
                actions: [(FlowActionSpec(ref: "action_attributes", next: "provision", type: "SUBMIT"), "signup:forms.attributes.submit.label")],
                dynamic: true),
            FlowNode(id: "assert", kind: .task, executor: "AuthAssertExecutor", next: "end"),
            FlowNode(id: "end", kind: .end)
        ])

    // MARK: RECOVERY: account → emailed confirmation code → new password.

    public static let recovery = FlowGraph(
        id: "default-recovery", type: .recovery,
        nodes: [
            FlowNode(id: "start", kind: .start, next: "prompt_identify"),
            prompt(
                "prompt_identify", title: "recovery:forms.identify.title",
                inputs: [FlowInputSpec(ref: "input_001", identifier: "username", type: "TEXT_INPUT")],
                labels: ["username": "recovery:forms.identify.username.label"],
                actions: [(FlowActionSpec(ref: "action_recover", next: "send_code", type: "SUBMIT"), "recovery:forms.identify.submit.label")]),
            FlowNode(id: "send_code", kind: .task, executor: "EmailCodeSender", properties: ["purpose": "recovery"], next: "prompt_code"),
            prompt(
                "prompt_code", title: "recovery:forms.code.title",
                inputs: [FlowInputSpec(ref: "input_code", identifier: "confirmationCode", type: "OTP_INPUT")],
                labels: ["confirmationCode": "recovery:forms.code.code.label"],
                actions: [
                    (FlowActionSpec(ref: "action_verify", next: "verify_code", type: "SUBMIT"), "recovery:forms.code.submit.label"),
                    (FlowActionSpec(ref: "action_resend", next: "send_code", type: "RESEND", validates: false), "recovery:forms.code.resend.label")
                ]),
            FlowNode(
                id: "verify_code", kind: .task, executor: "EmailCodeVerifier", properties: ["purpose": "recovery", "input": "confirmationCode"],
                next: "prompt_new_password", onFailure: "prompt_code"),
            prompt(
                "prompt_new_password", title: "recovery:forms.password.title",
                inputs: [FlowInputSpec(ref: "input_password", identifier: "password", type: "PASSWORD_INPUT", validation: passwordRules)],
                labels: ["password": "recovery:forms.password.password.label"],
                actions: [(FlowActionSpec(ref: "action_reset", next: "set_password", type: "SUBMIT"), "recovery:forms.password.submit.label")]),
            FlowNode(id: "set_password", kind: .task, executor: "PasswordUpdater", next: "end", onFailure: "prompt_new_password"),
            FlowNode(id: "end", kind: .end)
        ])

    // MARK: SIGNOUT: ends the session of the caller's access token.

    public static let signOut = FlowGraph(
        id: "default-signout", type: .signOut,
        nodes: [
            FlowNode(id: "start", kind: .start, next: "terminate"),
            FlowNode(id: "terminate", kind: .task, executor: "SessionTerminator", next: "end"),
            FlowNode(id: "end", kind: .end)
        ])

    /// What a client sends back from `navigator.credentials.get` / an `ASAuthorizationPlatformPublicKeyCredentialAssertion`.
    static let assertionInputs =
        ["credentialId", "clientDataJSON", "authenticatorData", "signature"].map {
            FlowInputSpec(ref: "input_\($0)", identifier: $0, type: "PASSKEY_INPUT")
        } + [FlowInputSpec(ref: "input_userHandle", identifier: "userHandle", type: "PASSKEY_INPUT", required: false)]

    /// What a client sends back from `navigator.credentials.create` (plus an optional name for the passkey).
    static let registrationInputs =
        ["credentialId", "clientDataJSON", "attestationObject"].map {
            FlowInputSpec(ref: "input_\($0)", identifier: $0, type: "PASSKEY_INPUT")
        } + [FlowInputSpec(ref: "input_credentialName", identifier: "credentialName", type: "TEXT_INPUT", required: false)]

    // MARK: Building prompts with their component trees

    static func prompt(
        _ id: String, title: String, inputs: [FlowInputSpec], labels: [String: String],
        actions: [(FlowActionSpec, String)], dynamic: Bool = false
    ) -> FlowNode {
        var block: [JSONValue] = inputs.map { input in
            component(
                input.ref, type: input.type,
                extra: [
                    "ref": .string(input.identifier), "required": .bool(input.required),
                    "label": .string(template(labels[input.identifier] ?? input.identifier))
                ])
        }
        if dynamic { block.append(component("dynamic_inputs", type: "DYNAMIC_INPUT_PLACEHOLDER", extra: [:])) }
        for (index, (action, label)) in actions.enumerated() {
            block.append(
                component(
                    action.ref, type: "ACTION",
                    extra: [
                        "variant": .string(index == 0 ? "PRIMARY" : "SECONDARY"),
                        "eventType": .string(action.type == "SUBMIT" ? "SUBMIT" : "TRIGGER"), "label": .string(template(label))
                    ]))
        }
        let components: [JSONValue] = [
            component(
                "heading_\(id)", type: "TEXT",
                extra: [
                    "category": .string("DISPLAY"), "variant": .string("HEADING_1"),
                    "label": .string(template(title))
                ]),
            component("block_\(id)", type: "BLOCK", extra: ["components": .array(block)])
        ]
        return FlowNode(id: id, kind: .prompt, inputs: inputs, actions: actions.map(\.0), components: components)
    }

    static func component(_ id: String, type: String, extra: [String: JSONValue]) -> JSONValue {
        var object = extra
        object["id"] = .string(id)
        object["type"] = .string(type)
        return .object(object)
    }

    static func template(_ key: String) -> String { "{{ t(\(key)) }}" }
}
