import ArgumentParser
import Foundation
import Latchkey

/// `latchkey consents list|withdraw`: the third-party applications the signed-in person consented to.
struct ConsentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consents", abstract: "List or withdraw the signed-in account's consents to third-party applications.",
        subcommands: [List.self, Withdraw.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the applications the signed-in account consented to.")
        func run() async throws {
            try await runClient {
                let (client, _) = try await PasskeyCommand.signedIn(origin: nil)
                let consents = try await client.consents()
                if consents.isEmpty { Console.out("No consents to third-party applications.") }
                for consent in consents {
                    Console.out(
                        [consent.clientId, consent.clientName, consent.scopes.joined(separator: " "), consent.grantedAt.map { "since \($0)" }]
                            .compactMap { $0 }.joined(separator: "\t"))
                }
            }
        }
    }

    struct Withdraw: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Withdraw a consent (by the client id `consents list` shows): the application's tokens stop working.")
        @Argument(help: "The application's client id.") var clientId: String
        func run() async throws {
            try await runClient {
                let (client, _) = try await PasskeyCommand.signedIn(origin: nil)
                try await client.withdrawConsent(clientId: clientId)
                Console.out("Consent to \(clientId) withdrawn; its tokens for this account are revoked.")
            }
        }
    }
}
