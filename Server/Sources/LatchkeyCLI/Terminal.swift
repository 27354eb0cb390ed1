import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Line input for interactive commands. Secrets are read with echo off when stdin is a terminal (and as plain
/// lines when it is not, so scripts can pipe answers in).
enum Terminal {
    /// Prints `text` without a newline and reads one line; nil at end of input.
    static func ask(_ text: String) -> String? {
        FileHandle.standardOutput.write(Data(text.utf8))
        return readLine(strippingNewline: true)
    }

    static func askSecret(_ text: String) -> String? {
        FileHandle.standardOutput.write(Data(text.utf8))
        var saved = termios()
        guard isatty(STDIN_FILENO) == 1, tcgetattr(STDIN_FILENO, &saved) == 0 else {
            defer { FileHandle.standardOutput.write(Data("\n".utf8)) }
            return readLine(strippingNewline: true)
        }
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            FileHandle.standardOutput.write(Data("\n".utf8))  // the Enter the user typed was not echoed
        }
        return readLine(strippingNewline: true)
    }
}
