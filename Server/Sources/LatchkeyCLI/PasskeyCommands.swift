import ArgumentParser
import Foundation
import Latchkey

/// Passkeys from the terminal, with the SDK's software authenticator. Its keys live in `$LATCHKEY_HOME/passkeys.json`
/// (0600) — a development tool: anyone who can read that file can sign in as its users.
extension CLIHome {
    var passkeyStoreURL: URL { directory.appendingPathComponent("passkeys.json") }

    func authenticator(attestation: SoftwareAuthenticator.AttestationFormat = .none) -> SoftwareAuthenticator {
        SoftwareAuthenticator(store: FilePasskeyKeyStore(url: passkeyStoreURL), attestation: attestation)
    }
}

/// Options of the passkey sign-in and sign-up commands.
struct PasskeyOptions: ParsableArguments {
    @Option(help: "WebAuthn origin written into clientDataJSON (default: the issuer's origin).")
    var origin: String?
    @Option(help: "Redirect URI the one-time token is redeemed through (captured, never opened).")
    var redirectUri: String = "io.latchkey.demo:/callback"

    /// A client for native sign-in: the software authenticator as both seams, the passkey store next to the session.
    func client(server: ServerOptions, home: CLIHome) async throws -> LatchkeyClient {
        let authenticator = home.authenticator()
        let client = LatchkeyClient(credentialProvider: SoftwareCredentialProvider(authenticator: authenticator), passkeyAuthenticator: authenticator)
        var config = LatchkeyConfig(baseUrl: server.issuer, clientId: server.clientId, scopes: server.scopes, afterSignInUrl: redirectUri)
        config.originWebAuthn = origin
        try await client.initialize(config: config, storage: try home.storage())
        return client
    }
}

/// Profile members of `latchkey signup --passkey`.
struct PasskeySignupOptions: ParsableArguments {
    @Option(help: "Email of the new account (asked when missing and no other identifier is given).")
    var email: String?
    @Option(help: "Phone number of the new account.")
    var phoneNumber: String?
    @Option(help: "Username of the new account.")
    var username: String?
    @Option(help: "Given name.")
    var givenName: String?
    @Option(help: "Family name.")
    var familyName: String?
    @Option(help: "Name shown for the passkey (default: the email or username).")
    var passkeyName: String?

    func profile() throws -> ProfilePasskeySignupRequest {
        var email = email
        if email == nil, phoneNumber == nil, username == nil {
            email = Terminal.ask("Email: ")?.trimmingCharacters(in: .whitespaces)
            guard let given = email, !given.isEmpty else { throw CLIError("an email, phone number or username is required") }
        }
        return ProfilePasskeySignupRequest(email: email, phoneNumber: phoneNumber, givenName: givenName, familyName: familyName, username: username)
    }
}

enum PasskeyCLI {
    static func signup(server: ServerOptions, passkey: PasskeyOptions, profile options: PasskeySignupOptions) async throws {
        let home = CLIHome()
        let profile = try options.profile()
        let client = try await passkey.client(server: server, home: home)
        let name = options.passkeyName ?? profile.email ?? profile.username ?? profile.phoneNumber ?? "latchkey"
        let token = try await client.signup(withRequest: PasskeySignupRequest(passkeyProfile: profile, friendlyName: name, scopes: server.scopes))
        try home.save(.init(issuer: server.issuer, clientId: server.clientId, scopes: server.scopes))
        Console.out(
            "Signed up to \(server.issuer) as \(token.user?.email ?? token.user?.preferredUsername ?? token.user?.id ?? "unknown user") with a passkey."
        )
    }

    static func login(server: ServerOptions, passkey: PasskeyOptions, username: String?) async throws {
        let home = CLIHome()
        let client = try await passkey.client(server: server, home: home)
        let request = NativeLoginRequest(scopes: server.scopes)
        let token: AuthToken
        if let username {
            token = try await client.login(
                withNonDiscoverableUsername: .Unspecified(username), forRequest: request,
                usingModalAuthorizationFor: [.Passkey], display: .Always)
        } else {
            token = try await client.login(withRequest: request, usingModalAuthorizationFor: [.Passkey], display: .Always)
        }
        try home.save(.init(issuer: server.issuer, clientId: server.clientId, scopes: server.scopes))
        Console.out(
            "Signed in to \(server.issuer) as \(token.user?.email ?? token.user?.preferredUsername ?? token.user?.id ?? "unknown user") with a passkey."
        )
    }
}

struct PasskeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passkey", abstract: "Manage the signed-in account's passkeys (software authenticator, $LATCHKEY_HOME/passkeys.json).",
        subcommands: [Register.self, List.self, Delete.self, Rename.self])

    /// The signed-in client, with the software authenticator.
    static func signedIn(origin: String?) async throws -> (LatchkeyClient, AuthToken) {
        let home = CLIHome()
        let profile = try home.load()
        let authenticator = home.authenticator()
        let client = LatchkeyClient(credentialProvider: nil, passkeyAuthenticator: authenticator)
        var config = LatchkeyConfig(baseUrl: profile.issuer, clientId: profile.clientId, scopes: profile.scopes)
        config.originWebAuthn = origin
        try await client.initialize(config: config, storage: try home.storage())
        return (client, try await client.authToken())
    }

    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a passkey for the signed-in account.")
        @Option(help: "Name shown for the passkey.") var name: String = "latchkey CLI"
        @Option(help: "WebAuthn origin (default: the issuer's origin).") var origin: String?
        func run() async throws {
            try await runClient {
                let (client, token) = try await PasskeyCommand.signedIn(origin: origin)
                try await client.registerNewPasskey(withRequest: NewPasskeyRequest(friendlyName: name), authToken: token)
                Console.out("Passkey \"\(name)\" registered.")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the signed-in account's passkeys.")
        func run() async throws {
            try await runClient {
                let (client, token) = try await PasskeyCommand.signedIn(origin: nil)
                let items = try await client.listWebAuthnCredentials(authToken: token)
                if items.isEmpty { Console.out("No passkeys.") }
                for item in items {
                    Console.out(
                        [item.id, item.friendlyName, item.createdAt.map { "created \($0)" }, item.lastUsedAt.map { "last used \($0)" }]
                            .compactMap { $0 }.joined(separator: "\t"))
                }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        /// Ids are base64url, so one in 64 begins with `-`, which a command line reads as an option.
        static let dashDiscussion =
            "An id that begins with a dash goes after `--`, e.g. `latchkey passkey delete -- -QFMmcx…`; scripts can always write `--`."
        static let configuration = CommandConfiguration(
            abstract: "Delete a passkey of the signed-in account (by the id `passkey list` shows).",
            discussion: Self.dashDiscussion)
        @Argument(help: "The passkey's id (after `--` when it begins with a dash).") var id: String
        func run() async throws {
            try await runClient {
                let (client, token) = try await PasskeyCommand.signedIn(origin: nil)
                try await client.deleteWebAuthnRegistration(id: id, authToken: token)
                Console.out("Passkey \(id) deleted.")
            }
        }
    }

    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rename a passkey of the signed-in account.", discussion: PasskeyCommand.Delete.dashDiscussion)
        @Argument(help: "The passkey's id (after `--` when it begins with a dash).") var id: String
        @Argument(help: "The new name.") var name: String
        func run() async throws {
            try await runClient {
                let (client, token) = try await PasskeyCommand.signedIn(origin: nil)
                let item = try await client.renameWebAuthnRegistration(id: id, friendlyName: name, authToken: token)
                Console.out("Passkey \(item.id) is now \"\(item.friendlyName)\".")
            }
        }
    }
}

/// The software authenticator on its own, to test any WebAuthn relying party: W3C JSON options on stdin, W3C JSON
/// responses on stdout (`PublicKeyCredential.toJSON()` shapes).
struct AuthenticatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authenticator", abstract: "Software WebAuthn authenticator: options JSON on stdin, response JSON on stdout.",
        subcommands: [Create.self, Get.self])

    struct Common: ParsableArguments {
        @Option(help: "The WebAuthn origin, e.g. https://example.com.") var origin: String
        @Option(help: "Key store file (default: $LATCHKEY_HOME/passkeys.json).") var keyStore: String?

        func store() -> FilePasskeyKeyStore {
            FilePasskeyKeyStore(url: keyStore.map { URL(fileURLWithPath: $0) } ?? CLIHome().passkeyStoreURL)
        }
        func input() throws -> Data {
            let data = FileHandle.standardInput.readDataToEndOfFile()
            guard !data.isEmpty else { throw CLIError("expected the options JSON on standard input") }
            return data
        }
    }

    static func printJSON(_ value: JSONValue) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        Console.out(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read PublicKeyCredentialCreationOptionsJSON, print RegistrationResponseJSON.")
        @OptionGroup var common: Common
        @Option(help: "Attestation format: none or packed (self attestation).") var attestation: String = "none"
        func run() async throws {
            try await runClient {
                guard let format = SoftwareAuthenticator.AttestationFormat(rawValue: attestation) else {
                    throw CLIError("--attestation must be none or packed")
                }
                let options = try PublicKeyCredentialCreationOptions(json: try common.input(), style: .w3c)
                let authenticator = SoftwareAuthenticator(store: common.store(), attestation: format)
                try printJSON(try await authenticator.createCredential(for: options, origin: common.origin, anchor: nil).w3cJSON)
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Read PublicKeyCredentialRequestOptionsJSON, print AuthenticationResponseJSON.")
        @OptionGroup var common: Common
        func run() async throws {
            try await runClient {
                let options = try PublicKeyCredentialRequestOptions(json: try common.input(), style: .w3c)
                let authenticator = SoftwareAuthenticator(store: common.store())
                try printJSON(try await authenticator.getAssertion(for: options, origin: common.origin, mode: .Always, anchor: nil).w3cJSON)
            }
        }
    }
}
