// swift-tools-version:6.2
import PackageDescription

// The Latchkey identity server, the `latchkey` command, the benchmarks, the fuzzing harness and every test (the SDK's
// included: most of them drive the real server). The SDK is the package at the repository's root, used here by path,
// so an app that adds the SDK resolves none of these dependencies (docs/architecture.md, "Two packages").

// Strict concurrency is the Swift 6 language mode default; these keep the code honest about imports and existentials.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

// The SDK's products, from the package one folder up.
let latchkey = Target.Dependency.product(name: "Latchkey", package: "Latchkey")
let latchkeyJOSE = Target.Dependency.product(name: "LatchkeyJOSE", package: "Latchkey")
let latchkeyApple = Target.Dependency.product(name: "LatchkeyApple", package: "Latchkey")
let latchkeySwiftUI = Target.Dependency.product(name: "LatchkeySwiftUI", package: "Latchkey")
let appleStandIns = Target.Dependency.product(
    name: "AppleFrameworkStandIns", package: "Latchkey", condition: .when(platforms: [.linux]))

let package = Package(
    name: "LatchkeyServerPackage",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "LatchkeyServer", targets: ["LatchkeyServer"]),
        .executable(name: "latchkey", targets: ["LatchkeyCLI"]),
        .executable(name: "latchkey-bench", targets: ["LatchkeyBenchmarks"]),
        // Fuzzing harness (Tests/fuzz/README.md): replays inputs when built normally; scripts/fuzz.sh builds it for libFuzzer.
        .executable(name: "latchkey-fuzz", targets: ["LatchkeyFuzz"])
    ],
    dependencies: [
        .package(name: "Latchkey", path: ".."),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        // PostgreSQL: the shared store of several server instances (issue 14).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.30.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.0.0"),
        // Operability (issue 15): `/metrics` in the Prometheus text format, one registry per server instance.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // HTTP parts of the channel pipeline (the 431 answer to oversized request heads); already under Hummingbird.
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1")
    ],
    targets: [
        // The identity server: Hummingbird 2 + GRDB (SQLite, WAL).
        .target(
            name: "LatchkeyServer",
            dependencies: [
                latchkeyJOSE,
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "HummingbirdOTP", package: "hummingbird-auth"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // The HTTP/1.1 client that connects to the address it checked (`OutboundHTTPClient`, review 3 R3-5).
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras")
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "LatchkeyCLI",
            dependencies: [
                latchkey,
                latchkeySwiftUI,
                "LatchkeyServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log")
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "LatchkeyBenchmarks",
            dependencies: [
                latchkey, latchkeyJOSE, "LatchkeyServer", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio")
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "LatchkeyFuzz",
            dependencies: [
                latchkey, latchkeyJOSE, "LatchkeyServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log")
            ],
            swiftSettings: swiftSettings
        ),
        // What every test target shares and needs no server: `eventually` and the programmable HTTP client double
        // (`ProgrammableHTTPClient`). The SDK's unit tests use it alone; `LatchkeyTestSupport` re-exports it.
        .target(
            name: "LatchkeySDKTestSupport", dependencies: [latchkey], path: "Tests/LatchkeySDKTestSupport",
            swiftSettings: swiftSettings),
        // What the test targets share, used by tests only: `LatchkeySDKTestSupport` (re-exported), the in-process
        // `TestServer`, `TestBrowser` (HTTP/1.1 over SwiftNIO), the hand-made OAuth client's steps, the stand-in Apple issuer
        // and the provider double. Its declarations are `package`: visible to this package's targets, in no product's API.
        .target(
            name: "LatchkeyTestSupport",
            dependencies: [
                latchkey, latchkeyJOSE, "LatchkeyServer", "LatchkeySDKTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdOTP", package: "hummingbird-auth"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ],
            path: "Tests/LatchkeyTestSupport",
            swiftSettings: swiftSettings
        ),
        // The SDK's unit tests: no server.
        .testTarget(
            name: "LatchkeyTests",
            dependencies: [latchkey, latchkeyJOSE, "LatchkeySDKTestSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // The server over loopback HTTP (some suites drive it with the SDK), its store, WebAuthn and configuration.
        .testTarget(
            name: "LatchkeyServerTests",
            dependencies: [
                "LatchkeyServer", latchkeyJOSE, latchkey, "LatchkeyTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "HummingbirdOTP", package: "hummingbird-auth"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // A loopback https server for `OutboundHTTPClient`'s TLS checks.
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio")
            ],
            swiftSettings: swiftSettings
        ),
        // The SDK end to end: against the in-process server, a provider double and third-party providers (glewlwyd,
        // django-oauth-toolkit) when `scripts/test.sh` runs them.
        .testTarget(
            name: "LatchkeySDKEndToEndTests",
            dependencies: [
                latchkey, latchkeyJOSE, "LatchkeyServer", "LatchkeyTestSupport",
                .product(name: "HummingbirdOTP", package: "hummingbird-auth")
            ],
            swiftSettings: swiftSettings
        ),
        // LatchkeySwiftUI's view models against the in-process server.
        .testTarget(
            name: "LatchkeySwiftUITests",
            dependencies: [
                latchkey, latchkeySwiftUI, "LatchkeyServer", "LatchkeyTestSupport",
                .product(name: "HummingbirdOTP", package: "hummingbird-auth")
            ],
            swiftSettings: swiftSettings
        ),
        // LatchkeyApple's adapters, driven through the scripted stand-ins of Apple's frameworks against the in-process server.
        .testTarget(
            name: "LatchkeyAppleTests",
            dependencies: [
                latchkey, latchkeyApple, latchkeyJOSE, "LatchkeyServer", "LatchkeyTestSupport",
                appleStandIns
            ],
            swiftSettings: swiftSettings
        )
    ],
    swiftLanguageModes: [.v6]
)

// ThreadSanitizer's build in scripts/test.sh (LATCHKEY_TSAN_BUILD=1, its own scratch path) compiles only what its suites
// need: the SDK's unit tests, the server's tests and the SDK end to end. It leaves out the `latchkey` command, the
// benchmarks, the fuzzer and the SwiftUI and Apple-layer tests (with the two modules and the stand-ins only they use);
// every other build sees the whole package.
if Context.environment["LATCHKEY_TSAN_BUILD"] != nil {
    let sanitizerSuites: Set<String> = ["LatchkeyTests", "LatchkeyServerTests", "LatchkeySDKEndToEndTests"]
    package.targets.removeAll { target in
        target.type == .executable || (target.type == .test && !sanitizerSuites.contains(target.name))
    }
    package.products.removeAll { $0.name != "LatchkeyServer" }
}
