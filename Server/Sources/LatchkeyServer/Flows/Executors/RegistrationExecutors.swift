import Foundation

/// Self-registration: optional invitation, username + password, the attributes the user schema requires,
/// then the account is created.
struct RegistrationExecutors: Sendable {
    let accounts: Accounts
    let store: any UserStore & InvitationStore & PasskeyStore
    let userSchema: UserSchema
    let hasher: PasswordHasher
    let clock: ServerClock

    /// Branches `required` for invite-only applications, `open` otherwise.
    func invitationGate(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        run.client.registration == .inviteOnly ? .branch("required") : .branch("open")
    }

    func verifyInvitation(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        let code = (run.submitted["invitationCode"] ?? "").trimmingCharacters(in: .whitespaces)
        let digest = Secrets.digest(code)
        guard let invitation = try await store.invitation(codeHash: digest), invitation.applicationId == run.state.applicationId,
            invitation.usedAt == nil
        else {
            return .retry(.invalidInvitation)
        }
        guard invitation.expiresAt > clock.now else { return .retry(.expiredInvitation) }
        run.state.invitationHash = digest
        if let email = invitation.email { run.state.inputs["email"] = email }  // the invited address is the account's
        return .next
    }

    func credentials(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        let username = (run.submitted["username"] ?? "").trimmingCharacters(in: .whitespaces)
        let password = run.submitted["password"] ?? ""
        // `credential: passkey` nodes register without a password: the passkey registered next is the credential.
        let passwordless = node.properties?["credential"] == "passkey"
        var problems: [FlowResponse.FieldError] = []
        if let problem = userSchema.problem("username", username) {
            problems.append(.init(identifier: "username", message: problem.text(run.locale)))
        }
        if !passwordless, let problem = PasswordPolicy.problem(password, username: username) {
            problems.append(.init(identifier: "password", message: problem.text(run.locale)))
        }
        if !problems.isEmpty { return .fieldErrors(problems) }
        if try await store.user(username: username) != nil { return .retry(.userExists) }
        run.state.inputs["username"] = username
        run.state.pendingPasswordHash = passwordless ? PasswordHasher.noPassword : try await hasher.hash(password)
        return .next
    }

    /// Asks (via `onIncomplete`) for the required attributes not collected yet, validates them, checks
    /// uniqueness and creates the account.
    func provision(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        let schema = userSchema
        guard let username = run.state.inputs["username"], let passwordHash = run.state.pendingPasswordHash else {
            return .fail(.badRequest("the registration has no credentials"))
        }
        let wanted = schema.attributes.filter { $0.required && $0.name != "username" }
        let asked = wanted.map { attribute in
            FlowInputSpec(ref: "input_\(attribute.name)", identifier: attribute.name, type: Self.inputType(attribute.kind), required: true)
        }
        var claims: [String: String] = [:]
        var problems: [FlowResponse.FieldError] = []
        var missing = false
        for attribute in wanted {
            let value = (run.value(attribute.name) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            if value.isEmpty { missing = true; continue }
            if let problem = schema.problem(attribute.name, value) {
                problems.append(.init(identifier: attribute.name, message: problem.text(run.locale)))
                run.state.inputs[attribute.name] = nil
            } else {
                claims[attribute.name] = value
            }
        }
        if missing || !problems.isEmpty { return .collect(asked, problems) }
        for attribute in schema.attributes where !attribute.required {
            if let value = run.state.inputs[attribute.name], schema.problem(attribute.name, value) == nil, !value.isEmpty {
                claims[attribute.name] = value
            }
        }
        var invitedEmail: String?
        if let digest = run.state.invitationHash {
            invitedEmail = try await store.invitation(codeHash: digest)?.email
            if let invitedEmail, claims["email"]?.lowercased() != invitedEmail.lowercased() {
                return .retry(.invalidInvitation, at: node.onIncomplete)
            }
        }
        claims["email_verified"] = invitedEmail != nil ? "true" : "false"
        let now = clock.now
        // A passkey registration reserved the id (it is the passkey's user handle) and must bring its credential.
        if passwordHash == PasswordHasher.noPassword, run.state.pendingPasskey == nil {
            return .fail(.badRequest("a registration without a password needs a verified passkey"))
        }
        let user = UserRecord(
            id: run.state.reservedUserId ?? UUID().uuidString.lowercased(), username: username, passwordHash: passwordHash,
            claims: claims, disabled: false, failedLogins: 0, lockedUntil: nil, createdAt: now)
        if let conflict = try await accounts.uniquenessConflict(for: user) {
            if conflict.attribute == "username" { return .retry(.userExists, at: node.onFailure) }
            run.state.inputs[conflict.attribute] = nil
            let display = schema.attribute(conflict.attribute)?.displayName ?? conflict.attribute
            run.state.dynamicInputs = asked
            return .retry(.attributeTaken(conflict.attribute, display: display), at: node.onIncomplete)
        }
        if let digest = run.state.invitationHash {
            guard try await store.useInvitation(codeHash: digest, now: now) else { return .fail(.invalidInvitation) }
        }
        do {
            if let passkey = run.state.pendingPasskey {
                try await store.insertUser(user, withPasskey: passkey)
            } else {
                try await store.insertUser(user)
            }
        } catch StoreError.conflict("passkey") {
            return .fail(PasskeyFailure.alreadyRegistered.flowFailure)
        } catch {
            // Lost a race for the username (UNIQUE constraint) between the check and the insert.
            if try await store.user(username: username) != nil { return .retry(.userExists, at: node.onFailure) }
            throw error
        }
        run.logger.info("user registered", metadata: ["user": .string(user.id), "application": .string(run.state.applicationId)])
        run.state.userId = user.id
        run.state.pendingPasswordHash = nil
        run.state.amr =
            run.state.pendingPasskey.map { AuthenticationMethods.passkey(userVerified: false, backupEligible: $0.backupEligible) } ?? ["pwd"]
        run.state.pendingPasskey = nil
        run.state.authTime = now
        run.state.dynamicInputs = nil
        return .next
    }

    static func inputType(_ kind: UserSchema.Attribute.Kind) -> String {
        switch kind {
        case .email: "EMAIL_INPUT"
        case .phone: "PHONE_INPUT"
        default: "TEXT_INPUT"
        }
    }
}

/// Password recovery's last step.
struct RecoveryExecutors: Sendable {
    let accounts: Accounts
    let store: any UserStore
    let audit: AuditTrail

    func updatePassword(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        guard run.state.recoveryVerified, let userId = run.state.userId, let user = try await store.user(id: userId) else {
            return .fail(.recoveryFailed)
        }
        switch try await accounts.setPassword(of: user, to: run.submitted["password"] ?? "") {
        case .success:
            run.logger.info("password reset through recovery", metadata: ["user": .string(user.id)])
            await audit.record(.passwordReset, subject: user.id, details: ["method": "recovery_code"], origin: run.auditOrigin)
            await accounts.notifyAccountChange(user, "password_changed", locale: run.locale, logger: run.logger)
            run.state.recoveryVerified = false
            return .next
        case .failure(.invalid(let problems)):
            return .fieldErrors(problems.map { .init(identifier: "password", message: $0.text(run.locale)) })
        case .failure(.conflict), .failure(.stale):
            return .fail(.recoveryFailed)
        }
    }
}
