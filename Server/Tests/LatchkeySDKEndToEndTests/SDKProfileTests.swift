import LatchkeyTestSupport
import Foundation
import Latchkey
import Testing

/// Answers profile requests (`/scim2/…`, `/users/…`) itself with a fixed response; everything else goes to the real
/// server. For the error mappings a healthy server never produces (5xx).
private func profileFailure(status: Int, body: String) -> ProgrammableHTTPClient {
    let http = ProgrammableHTTPClient()
    http.answer(where: { $0.url.path.hasPrefix("/scim2/") || $0.url.path.hasPrefix("/users/") }) { _ in
        HTTPResponse(status: status, headers: ["Content-Type": "application/scim+json"], body: Data(body.utf8))
    }
    return http
}

@Suite("SDK ↔ server: getUserProfile / updateUserProfile")
struct SDKProfileTests {
    func signedIn(
        _ server: TestServer, dialect: Dialect = .standard, scopes: [String]? = nil, http: any HTTPClient = productionHTTPClient(),
        username: String = "demo@example.com", password: String = "correct horse battery staple",
        clockTolerance: TimeInterval? = nil
    ) async throws -> LatchkeyClient {
        var config = server.sdkConfig()
        config.dialect = dialect
        if let clockTolerance { config.tokenValidation = TokenValidation(clockTolerance: clockTolerance) }
        if let scopes { config.scopes = scopes }
        let client = LatchkeyClient(http: http)
        try await client.initialize(config: config)
        _ = try await client.handleRedirectCallback(url: try await server.browse(try client.buildSignInURL(), username: username, password: password))
        return client
    }

    static func code(_ error: any Error) -> LatchkeyError.Code? { (error as? LatchkeyError)?.code }

    @Test func readAndUpdateOverSCIM() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let client = try await signedIn(server)
        let sub = try await client.getUser().sub

        let profile = try await client.getUserProfile()
        #expect(profile.endpoint == .scim)
        #expect(profile.id == sub && profile.userName == "demo@example.com" && profile.email == "demo@example.com")
        #expect(profile.givenName == "Demo" && profile.familyName == "User" && profile.displayName == "Demo User")
        #expect(profile.locale == "en-US" && profile.active == true)
        #expect(profile.version?.hasPrefix("W/") == true)
        #expect(profile.claims["schemas"] == .array([.string("urn:ietf:params:scim:schemas:core:2.0:User")]), "claims hold the whole resource")
        #expect(profile.claims["meta"] != nil && profile.claims["emails"] != nil)

        // OIDC claim names, a SCIM path and a removal, in one PATCH.
        let user = try await client.updateUserProfile(payload: [
            "given_name": .string("Ada"), "locale": .string("fr"), "family_name": .null, "displayName": .string("Ada of Demo")
        ])
        #expect(user.sub == sub && user.claims["given_name"] == .string("Ada") && user.claims["family_name"] == nil)
        #expect(user.displayName == "Ada of Demo" && user.email == "demo@example.com")

        let after = try await client.getUserProfile()
        #expect(after.givenName == "Ada" && after.familyName == nil && after.locale == "fr")
        #expect(after.version != profile.version)
        // A new address waits for the code sent to it; the app then posts the code to /users/me/email/verify.
        let email = try await client.updateUserProfile(payload: ["email": .string("ada.demo@example.com")])
        #expect(email.email == "demo@example.com")
        _ = try await server.verifyPendingEmail("ada.demo@example.com", token: try await client.getAccessToken())
        #expect(try await client.getUserProfile().email == "ada.demo@example.com")
    }

    @Test("through the SDK: an identifier change with an old sign-in is REAUTHENTICATION_REQUIRED (the session stays), a fresh sign-in may make it")
    func identifierChangesNeedARecentSignIn() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        for dialect in [Dialect.standard, .thunderID] {
            // The server's clock moves forward below; the SDK tolerates that skew in ID tokens.
            let client = try await signedIn(server, dialect: dialect, clockTolerance: 3600)
            server.advanceClock(301)  // past recent_auth_seconds (300); the access token itself is still valid
            await #expect { try await client.updateUserProfile(payload: ["email": .string("elsewhere@example.com")]) } throws: {
                Self.code($0) == .reauthenticationRequired && ($0 as? LatchkeyError)?.category == .authFailure
            }
            #expect(try await client.isSignedIn(), "the session is not over")
            #expect(try await client.getUserProfile().email == "demo@example.com")
            let fresh = try await signedIn(server, dialect: dialect, clockTolerance: 3600)
            let pending = try await fresh.updateUserProfile(payload: ["email": .string("elsewhere-\(dialect)@example.com")])
            #expect(pending.email == "demo@example.com", "the new address waits for its code")
        }
    }

    @Test func readAndUpdateOverUsersMe() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        // The option picks the endpoint on a standard-dialect client…
        let standard = try await signedIn(server)
        let viaOption = try await standard.getUserProfile(options: ["endpoint": "users/me"])
        #expect(viaOption.endpoint == .usersMe)
        #expect(viaOption.userName == "demo@example.com" && viaOption.givenName == "Demo")
        #expect(viaOption.claims["username"] == .string("demo@example.com") && viaOption.claims["schemas"] == nil)
        #expect(try await standard.getUserProfile(options: ["endpoint": "/scim2/Me"]).endpoint == .scim)

        // …and the thunderID dialect makes it the default, for reads and updates.
        let thunder = try await signedIn(server, dialect: .thunderID)
        #expect(try await thunder.getUserProfile().endpoint == .usersMe)
        let user = try await thunder.updateUserProfile(payload: [
            "given_name": .string("Grace"), "name.familyName": .string("Hopper"),
            "locale": .null
        ])
        #expect(user.claims["given_name"] == .string("Grace") && user.claims["family_name"] == .string("Hopper"))
        #expect(user.claims["locale"] == nil, "null removes")
        #expect(user.email == "demo@example.com", "the attributes not in the payload are kept (read, merged, PUT)")
        let scim = try await standard.getUserProfile()
        #expect(scim.givenName == "Grace" && scim.familyName == "Hopper" && scim.locale == nil, "both endpoints edit the same account")
        await #expect { try await thunder.updateUserProfile(payload: ["locale": .string("fr")], userId: scim.id) } throws: {
            Self.code($0) == .invalidInput
        }
    }

    @Test func serverErrorsMapToSDKCodes() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let client = try await signedIn(server)

        // 400: the server's detail and scimType reach the app.
        do {
            _ = try await client.updateUserProfile(payload: ["email": .string("not an address")])
            Issue.record("an invalid email was accepted")
        } catch let error as LatchkeyError {
            #expect(error.code == .invalidInput && error.statusCode == 400 && error.serverCode == "invalidValue")
            #expect(error.message.contains("emails") && error.message.contains("not a valid email"), "\(error.message)")
        }
        // 409: a unique value that another account has.
        do {
            _ = try await client.updateUserProfile(payload: ["email": .string("ada@example.com")])
            Issue.record("a taken email was accepted")
        } catch let error as LatchkeyError {
            #expect(error.code == .userAlreadyExists && error.serverCode == "uniqueness" && error.message.contains("emails"))
        }
        // 400 invalidPath: an attribute the server does not have.
        await #expect { try await client.updateUserProfile(payload: ["nickName": .string("x")]) } throws: {
            Self.code($0) == .invalidInput && ($0 as? LatchkeyError)?.serverCode == "invalidPath"
        }
        // 403: another account without the admin scope.
        let adaId = try await signedIn(server, username: "ada@example.com", password: TestServer.adaPassword).getUserProfile().id
        await #expect { try await client.updateUserProfile(payload: ["locale": .string("fr")], userId: adaId) } throws: {
            Self.code($0) == .authenticationFailed && ($0 as? LatchkeyError)?.statusCode == 403
        }
        // Caught before any request.
        await #expect { try await client.updateUserProfile(payload: [:]) } throws: { Self.code($0) == .invalidInput }
        await #expect { try await client.getUserProfile(options: ["endpoint": "graph/me"]) } throws: { Self.code($0) == .invalidInput }

        // thunderID dialect: USR codes.
        let thunder = try await signedIn(server, dialect: .thunderID)
        await #expect { try await thunder.updateUserProfile(payload: ["email": .string("nope")]) } throws: {
            Self.code($0) == .invalidInput && ($0 as? LatchkeyError)?.serverCode == "USR-1019"
                && ($0 as? LatchkeyError)?.message.contains("email") == true
        }
        await #expect { try await thunder.updateUserProfile(payload: ["email": .string("ada@example.com")]) } throws: {
            Self.code($0) == .userAlreadyExists && ($0 as? LatchkeyError)?.serverCode == "USR-1014"
        }

        // 401: the token was revoked behind the SDK's back.
        try await server.revoke(try await client.getAccessToken())
        await #expect { try await client.getUserProfile() } throws: {
            Self.code($0) == .sessionExpired && ($0 as? LatchkeyError)?.statusCode == 401 && ($0 as? LatchkeyError)?.serverCode == "invalid_token"
        }
        await #expect { try await thunder.getUserProfile(options: nil, sessionId: "never-signed-in") } throws: { Self.code($0) == .sessionExpired }

        // 5xx, with a SCIM body and with none.
        let failing = try await signedIn(
            server,
            http: profileFailure(
                status: 503,
                body: """
                    {"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"503","detail":"directory offline"}
                    """))
        await #expect { try await failing.getUserProfile() } throws: {
            Self.code($0) == .serverError && ($0 as? LatchkeyError)?.message.contains("directory offline") == true
        }
        let broken = try await signedIn(server, http: profileFailure(status: 200, body: "<html>"))
        await #expect { try await broken.getUserProfile() } throws: { Self.code($0) == .serverError }
    }

    @Test func administratorUpdatesAnotherUser() async throws {
        let server = try await TestServer.startForProfiles()
        defer { Task { await server.stop() } }
        let adaId = try await signedIn(server, username: "ada@example.com", password: TestServer.adaPassword).getUserProfile().id
        let admin = try await signedIn(server, scopes: ["openid", "profile", "email", "scim.admin"])
        let updated = try await admin.updateUserProfile(payload: ["given_name": .string("Augusta"), "active": .bool(true)], userId: adaId)
        #expect(updated.sub == adaId && updated.claims["given_name"] == .string("Augusta") && updated.username == "ada@example.com")
        #expect(try await admin.getUserProfile().userName == "demo@example.com", "the admin's own profile is untouched")
        await #expect { try await admin.updateUserProfile(payload: ["locale": .string("fr")], userId: "no-such-user") } throws: {
            Self.code($0) == .invalidInput && ($0 as? LatchkeyError)?.statusCode == 404
        }
    }
}
