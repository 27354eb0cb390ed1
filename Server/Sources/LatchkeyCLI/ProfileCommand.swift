import ArgumentParser
import Foundation
import Latchkey

/// `latchkey profile` shows the signed-in user's profile; `latchkey profile set given_name=Ada locale=fr` changes it.
struct ProfileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "Show or change the signed-in user's profile (SCIM /scim2/Me, or thunderID /users/me).",
        subcommands: [Show.self, SetAttributes.self],
        defaultSubcommand: Show.self)

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the profile.")

        @Option(help: "Profile API: scim2/Me (default) or users/me.")
        var endpoint: String?
        @Flag(help: "Print every attribute as JSON, as the server sent it.")
        var json = false

        func run() async throws {
            try await runClient {
                let client = try await CLIHome().client()
                let profile = try await client.getUserProfile(options: endpoint.map { ["endpoint": $0] })
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                    Console.out(String(decoding: try encoder.encode(profile.claims), as: UTF8.self))
                } else {
                    ProfileCommand.print(profile)
                }
            }
        }
    }

    struct SetAttributes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Change attributes: NAME=VALUE sets, NAME= removes.",
            discussion: """
                Names are OpenID Connect claims (given_name, family_name, name, email, phone_number, picture, locale, \
                username) or SCIM paths (name.givenName, displayName, emails[type eq "work"].value).
                Example: latchkey profile set given_name=Ada locale=fr
                """)

        @Argument(help: "NAME=VALUE pairs.")
        var assignments: [String]

        func validate() throws {
            guard !assignments.isEmpty else { throw ValidationError("give at least one NAME=VALUE") }
            for assignment in assignments where Self.parse(assignment) == nil {
                throw ValidationError("\(assignment) is not NAME=VALUE")
            }
        }

        static func parse(_ assignment: String) -> (String, JSONValue)? {
            guard let equals = assignment.firstIndex(of: "="), equals != assignment.startIndex else { return nil }
            let value = String(assignment[assignment.index(after: equals)...])
            return (String(assignment[..<equals]), value.isEmpty ? .null : .string(value))
        }

        func run() async throws {
            try await runClient {
                var payload: [String: JSONValue] = [:]
                for assignment in assignments {
                    if let (name, value) = Self.parse(assignment) { payload[name] = value }
                }
                let client = try await CLIHome().client()
                _ = try await client.updateUserProfile(payload: payload)
                Console.out("Profile updated.")
                ProfileCommand.print(try await client.getUserProfile())
            }
        }
    }

    static func print(_ profile: UserProfile) {
        let rows: [(String, String?)] = [
            ("id", profile.id), ("username", profile.userName), ("name", profile.displayName), ("given name", profile.givenName),
            ("family name", profile.familyName), ("email", profile.email), ("phone", profile.phoneNumber),
            ("picture", profile.picture), ("locale", profile.locale), ("active", profile.active.map { $0 ? "yes" : "no" })
        ]
        for case let (label, value?) in rows {
            Console.out(label.padding(toLength: 12, withPad: " ", startingAt: 0) + value)
        }
    }
}
