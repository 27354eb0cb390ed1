import Foundation

/// `latchkey-fuzz`: one harness per decoder of untrusted input (Tests/fuzz/README.md).
///
/// Built normally, it replays inputs: `latchkey-fuzz TARGET FILE_OR_DIR…` runs every file through the target (a crash
/// input stays a regression check), `latchkey-fuzz --corpora DIR` replays DIR/<target>/* for every target.
///
/// Built for fuzzing (`scripts/fuzz.sh`: coverage and AddressSanitizer instrumentation, `-D LATCHKEY_LIBFUZZER`, linked
/// with libFuzzer's no-main runtime), libFuzzer drives the target named by `LATCHKEY_FUZZ_TARGET`, with libFuzzer's
/// own command line. libFuzzer's `main` cannot be used: SwiftPM gives every executable its own entry point.
@main
enum LatchkeyFuzz {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--list" {
            for target in FuzzTargets.all { print("\(target.name)\t\(target.maxLength)\t\(target.summary)") }
            return
        }
        #if LATCHKEY_LIBFUZZER
        let name = ProcessInfo.processInfo.environment["LATCHKEY_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTargets.named(name) else {
            fail("set LATCHKEY_FUZZ_TARGET to one of: \(FuzzTargets.all.map(\.name).joined(separator: ", ")) (\(name.isEmpty ? "unset" : name))")
        }
        exit(LibFuzzer.run(target))
        #else
        replay(arguments)
        #endif
    }

    static func replay(_ arguments: [String]) {
        if arguments.first == "--corpora", arguments.count == 2 {
            var total = 0
            for target in FuzzTargets.all {
                let directory = URL(fileURLWithPath: arguments[1]).appendingPathComponent(target.name).path
                guard FileManager.default.fileExists(atPath: directory) else { continue }
                let count = run(target, paths: [directory])
                print("\(target.name): \(count) input(s)")
                total += count
            }
            print("replayed \(total) input(s), no crash")
            return
        }
        guard arguments.count >= 2, let target = FuzzTargets.named(arguments[0]) else {
            fail(
                """
                usage: latchkey-fuzz TARGET FILE_OR_DIR…   (replay inputs through one target)
                       latchkey-fuzz --corpora DIR          (replay DIR/<target>/* for every target)
                       latchkey-fuzz --list
                targets: \(FuzzTargets.all.map(\.name).joined(separator: ", "))
                """)
        }
        let count = run(target, paths: Array(arguments.dropFirst()))
        print("\(target.name): replayed \(count) input(s), no crash")
    }

    /// Runs every regular file under `paths` (directories recursively, hidden files skipped) through `target`.
    static func run(_ target: FuzzTarget, paths: [String]) -> Int {
        var count = 0
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { fail("no such file: \(path)") }
            var files: [String] = []
            if isDirectory.boolValue {
                let enumerator = FileManager.default.enumerator(atPath: path)
                while let relative = enumerator?.nextObject() as? String {
                    let full = URL(fileURLWithPath: path).appendingPathComponent(relative).path
                    var dir: ObjCBool = false
                    if !relative.split(separator: "/").contains(where: { $0.hasPrefix(".") }),
                        FileManager.default.fileExists(atPath: full, isDirectory: &dir), !dir.boolValue
                    {
                        files.append(full)
                    }
                }
                files.sort()
            } else {
                files = [path]
            }
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { fail("cannot read \(file)") }
                target.run(data)
                count += 1
            }
        }
        return count
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(2)
    }
}

#if LATCHKEY_LIBFUZZER
/// libFuzzer's driver for programs with their own `main` (libclang_rt.fuzzer_no_main): it parses libFuzzer's flags
/// from argv and calls back once per input.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

enum LibFuzzer {
    /// The target of this process; a C callback cannot capture it. Set once, before the driver starts.
    nonisolated(unsafe) private static var current: FuzzTarget?

    static func run(_ target: FuzzTarget) -> CInt {
        current = target
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        return LLVMFuzzerRunDriver(&argc, &argv) { bytes, count in
            let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
            LibFuzzer.current?.run(data)
            return 0
        }
    }
}
#endif
