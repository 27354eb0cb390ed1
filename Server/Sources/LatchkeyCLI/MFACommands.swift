import ArgumentParser
import Foundation
import Latchkey

/// `latchkey mfa list|enroll|recovery-codes|remove`: the signed-in account's own second factors. Changes need a recent sign-in
/// (`latchkey login` again when the server says so); the server mails the account about each.
struct MFACommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mfa", abstract: "List, add or remove the signed-in account's second factors, or make new recovery codes.",
        subcommands: [List.self, Enroll.self, RecoveryCodes.self, Remove.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the signed-in account's second factors.")
        func run() async throws {
            try await runClient {
                let (client, _) = try await PasskeyCommand.signedIn(origin: nil)
                let listed = try await client.secondFactors()
                if listed.factors.isEmpty { Console.out("No second factors.") }
                for factor in listed.factors {
                    Console.out(
                        [
                            factor.kind.rawValue, "added \(ISO8601DateFormatter().string(from: factor.createdAt))",
                            factor.isUsable ? nil : "unusable: no verified email"
                        ]
                        .compactMap { $0 }.joined(separator: "\t"))
                }
                if let codes = listed.recoveryCodes {
                    Console.out(
                        "recovery codes\t\(codes.remaining) of \(codes.total) unused, made \(ISO8601DateFormatter().string(from: codes.createdAt))")
                }
                if listed.isRequired { Console.out("This application requires a second factor: the last one cannot be removed.") }
            }
        }
    }

    struct Enroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a second factor: `totp` (an authenticator app; asks for its first code) or `email` (codes to the verified address).")
        @Argument(help: "totp or email.") var kind: SecondFactorKind
        func run() async throws {
            try await runClient {
                let (client, _) = try await PasskeyCommand.signedIn(origin: nil)
                switch kind {
                case .email:
                    try await client.enableEmailCodes()
                    Console.out("Sign-in codes will be sent to your verified email address.")
                case .totp:
                    let enrollment = try await client.startTOTPEnrollment()
                    // The secret is shown this once, to the person at the terminal; it is never written to disk.
                    Console.out("Add this key to your authenticator app (open the link, or type the key in):")
                    Console.out(enrollment.uri.absoluteString)
                    Console.out("Key: \(enrollment.secret)")
                    while true {
                        guard let code = Terminal.ask("Code from the app: ") else { throw CLIError("input ended before a code was entered") }
                        do {
                            try await client.confirmTOTPEnrollment(enrollment, code: code)
                            break
                        } catch let error as LatchkeyError where error.code == .mfaFailed && error.statusCode == 400 {
                            Console.err("That code is not right; wait for the next one and try again.")
                        }
                    }
                    Console.out("Authenticator app added: signing in now also asks for its code.")
                }
            }
        }
    }

    struct RecoveryCodes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "recovery-codes",
            abstract: "Make a new set of recovery codes (each signs in once in place of the second factor); the earlier set stops working.")
        func run() async throws {
            try await runClient {
                let (client, _) = try await PasskeyCommand.signedIn(origin: nil)
                let set = try await client.generateRecoveryCodes()
                // Shown this once, to the person at the terminal; never written to disk.
                Console.out("Keep these recovery codes somewhere safe. Each works once, typed where the 6-digit code goes:")
                for code in set.codes { Console.out(code) }
                Console.out("Codes made before no longer work.")
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a second factor (`totp` or `email`).")
        @Argument(help: "totp or email.") var kind: SecondFactorKind
        func run() async throws {
            try await runClient {
                let (client, _) = try await PasskeyCommand.signedIn(origin: nil)
                try await client.removeSecondFactor(kind)
                Console.out("Second factor \(kind.rawValue) removed.")
            }
        }
    }
}

extension SecondFactorKind: @retroactive ExpressibleByArgument {}
