import ArgumentParser
import Foundation
import Latchkey

/// Where the CLI keeps its sign-in: `$LATCHKEY_HOME`, else `~/.config/latchkey` (`$XDG_CONFIG_HOME/latchkey`).
/// The directory is 0700 and every file 0600.
struct CLIHome {
    let directory: URL

    init() {
        let env = ProcessInfo.processInfo.environment
        if let home = env["LATCHKEY_HOME"], !home.isEmpty {
            directory = URL(fileURLWithPath: home)
        } else if let xdg = env["XDG_CONFIG_HOME"], !xdg.isEmpty {
            directory = URL(fileURLWithPath: xdg).appendingPathComponent("latchkey")
        } else {
            directory = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config/latchkey")
        }
    }

    struct Profile: Codable { var issuer: String; var clientId: String; var scopes: [String] }

    var profileURL: URL { directory.appendingPathComponent("profile.json") }

    func storage() throws -> FileStorageAdapter { try FileStorageAdapter(directory: directory.appendingPathComponent("sessions")) }

    func save(_ profile: Profile) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let data = try JSONEncoder().encode(profile)
        guard FileManager.default.createFile(atPath: profileURL.path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw CLIError("cannot write \(profileURL.path)")
        }
    }

    func load() throws -> Profile {
        guard let data = try? Data(contentsOf: profileURL), let profile = try? JSONDecoder().decode(Profile.self, from: data) else {
            throw CLIError("Not signed in. Run `latchkey login` first.")
        }
        return profile
    }

    /// A client restored from the saved profile and session.
    func client(userAgent: any AuthorizationUserAgent = LoopbackUserAgent()) async throws -> LatchkeyClient {
        let profile = try load()
        let client = LatchkeyClient(userAgent: userAgent)
        try await client.initialize(
            config: LatchkeyConfig(baseUrl: profile.issuer, clientId: profile.clientId, scopes: profile.scopes),
            storage: try storage())
        return client
    }
}

struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Turns SDK errors into one clear line and exit code 1.
func runClient(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as CLIError {
        Console.err("latchkey: \(error.description)")
        throw ExitCode(1)
    } catch let error as LatchkeyError {
        let message: String =
            switch error.code {
            case .networkError, .requestTimeout: "cannot reach the server (\(error.message)). Is it running?"
            case .canceled: "sign-in canceled: \(error.message)"
            case .sessionExpired: "your session has ended; run `latchkey login` again (\(error.message))"
            case .invalidConfiguration: "configuration problem: \(error.message)"
            default: error.description
            }
        Console.err("latchkey: \(message)")
        throw ExitCode(1)
    }
}

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sign in with the browser (loopback redirect, PKCE) to an OpenID Connect issuer.",
        discussion: """
            At a provider other than Latchkey's server, register the client with the redirect URI http://127.0.0.1/callback \
            (any port) and, so that `latchkey logout` can confirm the end of the provider's session, the post-logout \
            redirect URI http://127.0.0.1/logout (any port): without it the provider cannot send the browser back, and \
            logout exits 2 there.
            """)

    @OptionGroup var server: ServerOptions
    @Flag(help: "Do not open a browser: print the authorization URL on its own line and wait for the redirect.")
    var noBrowser = false
    @Flag(help: "Sign in right here in the terminal (app-native flow: password, then a one-time code if the account has one).")
    var native = false
    @Flag(help: "Sign in with a passkey of the software authenticator ($LATCHKEY_HOME/passkeys.json).")
    var passkey = false
    @Flag(help: "Sign in from another device (RFC 8628): prints a code and a URL to open anywhere, and waits until it is allowed.")
    var device = false
    @Option(help: "With --passkey: sign in as this account (username-first) instead of picking a discoverable passkey.")
    var username: String?
    @OptionGroup var passkeyOptions: PasskeyOptions

    func run() async throws {
        try await runClient {
            if passkey { return try await PasskeyCLI.login(server: server, passkey: passkeyOptions, username: username) }
            let home = CLIHome()
            if device {
                let client = try await server.client(home: home)
                let authorization = try await client.startDeviceAuthorization(scopes: server.scopes)
                Console.out(
                    "To sign in, open \(authorization.verificationUri.absoluteString) on any device and enter the code \(authorization.userCode)")
                if let complete = authorization.verificationUriComplete { Console.out("(or open \(complete.absoluteString))") }
                Console.err("Waiting for the sign-in to be allowed…")
                let user = try await client.completeDeviceAuthorization(authorization)
                try server.signedIn(home: home, user: user)
                return
            }
            if native {
                let client = try await server.client(home: home)
                let user = try await InteractiveFlow(client: client, flowType: .authentication, issuer: server.issuer).run()
                try server.signedIn(home: home, user: user)
                return
            }
            let agent = LoopbackUserAgent(mode: noBrowser ? .printOnly : .system, output: { Console.out($0) })
            let client = try await server.client(home: home, userAgent: agent)
            Console.err(noBrowser ? "Open this URL in a browser to sign in; waiting for the redirect…" : "Signing in with your browser…")
            let token = try await client.webviewLogin(WebviewLoginRequest(scope: server.scopes))
            try home.save(.init(issuer: server.issuer, clientId: server.clientId, scopes: server.scopes))
            let who = token.user?.email ?? token.user?.preferredUsername ?? token.user?.id ?? "unknown user"
            Console.out("Signed in to \(server.issuer) as \(who).")
        }
    }
}

/// Which server and application the sign-in commands talk to.
struct ServerOptions: ParsableArguments {
    @Option(help: "Issuer URL (default: the local development server).")
    var issuer: String = "http://localhost:8090"
    @Option(help: "OAuth client id (a public client that allows http://127.0.0.1/callback on any port).")
    var clientId: String = "latchkey-demo"
    @Option(help: "Space-separated scopes.")
    var scope: String = "openid profile email offline_access"

    var scopes: [String] { scope.split(separator: " ").map(String.init) }

    func client(home: CLIHome, userAgent: any AuthorizationUserAgent = LoopbackUserAgent()) async throws -> LatchkeyClient {
        let client = LatchkeyClient(userAgent: userAgent)
        try await client.initialize(config: LatchkeyConfig(baseUrl: issuer, clientId: clientId, scopes: scopes), storage: try home.storage())
        return client
    }

    /// Saves the profile after an app-native sign-in or sign-up and says who is signed in.
    func signedIn(home: CLIHome, user: User?) throws {
        try home.save(.init(issuer: issuer, clientId: clientId, scopes: scopes))
        Console.out("Signed in to \(issuer) as \(user?.email ?? user?.username ?? user?.sub ?? "unknown user").")
    }
}

struct Signup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create an account in the terminal (app-native registration) and sign in.")
    @OptionGroup var server: ServerOptions
    @Flag(help: "Create the account with a passkey of the software authenticator instead of a password.")
    var passkey = false
    @OptionGroup var passkeyOptions: PasskeyOptions
    @OptionGroup var profile: PasskeySignupOptions

    func run() async throws {
        try await runClient {
            if passkey { return try await PasskeyCLI.signup(server: server, passkey: passkeyOptions, profile: profile) }
            let home = CLIHome()
            let client = try await server.client(home: home)
            let user = try await InteractiveFlow(client: client, flowType: .registration, issuer: server.issuer).run()
            try server.signedIn(home: home, user: user)
        }
    }
}

struct Recover: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Reset a forgotten password in the terminal (a code is sent by email).")
    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await runClient {
            let client = try await server.client(home: CLIHome())
            _ = try await InteractiveFlow(client: client, flowType: .recovery, issuer: server.issuer).run()
            Console.out("Your password has been changed. Sign in with `latchkey login --native`.")
        }
    }
}

struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a valid access token, refreshing it if needed.",
        discussion: """
            With --repeat N it asks N times in a row and prints each token on its own line: a soak test of refreshing, \
            alone or beside other processes that share the sign-in. A failure that keeps the session (no network, a \
            timeout, a busy server) is reported on standard error and the next attempt goes on; a session that ended \
            stops the run (exit 1).
            """)

    @Option(help: "Ask for a token this many times, one after another (1…10000000).")
    var `repeat`: Int = 1

    func validate() throws {
        guard (1...10_000_000).contains(`repeat`) else { throw ValidationError("--repeat must be 1…10000000") }
    }

    func run() async throws {
        try await runClient {
            let client = try await CLIHome().client()
            guard `repeat` > 1 else {
                Console.out(try await client.getAccessToken())
                return
            }
            for _ in 0..<`repeat` {
                do {
                    Console.out(try await client.getAccessToken())
                } catch let error as LatchkeyError where Self.keepsTheSession(error) {
                    Console.err("latchkey: attempt failed, the session is kept (\(error.code.rawValue))")
                }
            }
        }
    }

    /// The failures a repeated run goes on after: the SDK kept the session (it ends one only on a dead grant).
    static func keepsTheSession(_ error: LatchkeyError) -> Bool {
        [.networkError, .requestTimeout, .serverError, .storageUnavailable].contains(error.code)
    }
}

struct Whoami: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the signed-in user.")
    func run() async throws {
        try await runClient {
            let home = CLIHome()
            let client = try await home.client()
            guard try await client.isSignedIn() else { throw CLIError("Not signed in. Run `latchkey login` first.") }
            let user = try await client.getUser()
            Console.out("issuer   \(try home.load().issuer)")
            Console.out("subject  \(user.sub)")
            if let name = user.displayName { Console.out("name     \(name)") }
            if let email = user.email { Console.out("email    \(email)") }
        }
    }
}

struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sign out: forget local tokens, revoke them at the provider, end the provider's session (in the browser the sign-in used).",
        discussion: """
            Prints what was ended and what was not. Exit status 0: everything was; 2: something stays valid at the provider \
            (said why). At a provider other than Latchkey's server, the provider's session can only be confirmed ended when \
            the client's post-logout redirect URIs include http://127.0.0.1/logout (any port).
            """)

    @Flag(help: "Do not open a browser to end the provider's session: print the URL on its own line and wait for the redirect.")
    var noBrowser = false
    @Flag(help: "Leave the provider's session (in the browser) alone: only revoke the tokens.")
    var keepProviderSession = false

    func run() async throws {
        try await runClient {
            let home = CLIHome()
            let agent = LoopbackUserAgent(mode: noBrowser ? .printOnly : .system, output: { Console.out($0) })
            let client = try await home.client(userAgent: agent)
            let report = try await client.signOutReporting(options: SignOutOptions(providerSession: keepProviderSession ? .keep : .automatic))
            try? FileManager.default.removeItem(at: home.profileURL)
            Console.out("Signed out here: the tokens are forgotten on this computer.")
            for line in SignOutWording.lines(report) { Console.out(line) }
            // The exit status says whether everything asked for was done at the provider too.
            if !report.isComplete { throw ExitCode(2) }
        }
    }
}
