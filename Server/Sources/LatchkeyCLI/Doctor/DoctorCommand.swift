import ArgumentParser
import Foundation
import Latchkey

/// `latchkey doctor`: checks a deployment from the outside, the way an iOS app and a browser will meet it, and
/// prints each finding with its fix. Exit status 1 when anything fails (warnings alone exit 0).
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check a deployment the way iOS and browsers will: discovery, keys, RP ID, association files, redirect URIs.",
        discussion: """
            Each finding is printed with what to fix. Exits 1 when a check fails.

              latchkey doctor --issuer https://id.example.com --app-id ABCDE12345.com.example.app \\
                --client-id my-app --redirect-uri https://id.example.com/app/callback
            """)

    @Option(help: "The issuer the apps are configured with (exactly, as in the discovery document).")
    var issuer: String

    @Option(name: .customLong("app-id"), help: "The app's identifier, TEAMID.bundle.id, as its entitlements name it.")
    var appId: String?

    @Option(name: .customLong("client-id"), help: "The app's client id: its RP ID and redirect URIs are checked.")
    var clientId: String?

    @Option(name: .customLong("redirect-uri"), help: "A redirect URI the app uses (repeatable; needs --client-id).")
    var redirectURIs: [String] = []

    @Option(name: .customLong("rp-id"), help: "The passkeys' RP ID, when --client-id cannot ask the server (default: the issuer's host).")
    var rpId: String?

    func validate() throws {
        guard redirectURIs.isEmpty || clientId != nil else { throw ValidationError("--redirect-uri needs --client-id") }
        guard let url = URL(string: issuer), url.scheme == "https" || url.scheme == "http", url.host != nil else {
            throw ValidationError("--issuer must be an http(s) URL, got \(issuer)")
        }
    }

    func run() async throws {
        guard let issuerURL = URL(string: issuer) else { throw ValidationError("--issuer must be an http(s) URL, got \(issuer)") }
        let doctor = DeploymentDoctor(
            issuer: issuerURL, appId: appId, clientId: clientId, redirectURIs: redirectURIs, rpId: rpId, http: URLSessionHTTPClient(timeout: 15))
        let report = await doctor.examine()
        Console.out("latchkey doctor: \(issuer)")
        for finding in report.findings { Console.out(finding.rendered) }
        Console.out(report.summary)
        if report.hasFailures { throw ExitCode(1) }
    }
}
