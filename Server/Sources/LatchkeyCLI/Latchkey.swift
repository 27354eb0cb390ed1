import ArgumentParser
import Foundation

@main
struct LatchkeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract: "Latchkey identity server and command-line client.",
        subcommands: [
            Serve.self, Login.self, Signup.self, Recover.self, Token.self, Whoami.self, ProfileCommand.self, Logout.self, Keys.self, Migrate.self,
            PasskeyCommand.self, AuthenticatorCommand.self, ConsentCommand.self, MFACommand.self, DoctorCommand.self
        ])
}

/// Unbuffered console output: banners and URLs must reach a pipe (scripts, tests) the moment they are printed.
enum Console {
    static func out(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
    static func err(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }
}
