// swift-tools-version:6.2
import PackageDescription

// Strict concurrency is the Swift 6 language mode default; these keep the code honest about imports and existentials.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

let package = Package(
    name: "Latchkey",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .visionOS(.v1)],
    products: [
        .library(name: "Latchkey", targets: ["Latchkey"]),
        .library(name: "LatchkeyApple", targets: ["LatchkeyApple"]),
        .library(name: "LatchkeySwiftUI", targets: ["LatchkeySwiftUI"]),
        .library(name: "LatchkeyServer", targets: ["LatchkeyServer"]),
        .executable(name: "latchkey", targets: ["LatchkeyCLI"]),
        .executable(name: "latchkey-bench", targets: ["LatchkeyBenchmarks"]),
        // Fuzzing harness (Tests/fuzz/README.md): replays inputs when built normally; scripts/fuzz.sh builds it for libFuzzer.
        .executable(name: "latchkey-fuzz", targets: ["LatchkeyFuzz"])
    ],
    dependencies: [
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
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // `swift package generate-documentation`: the DocC catalogs of Latchkey, LatchkeyApple and LatchkeySwiftUI.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0")
    ],
    targets: [
        // JOSE (JWS/JWK/base64url) shared by the SDK (ID-token verification) and the server (signing).
        .target(
            name: "LatchkeyJOSE",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto")
            ],
            swiftSettings: swiftSettings
        ),
        // Linux only: the subset of AuthenticationServices and Security the SDK's Apple code uses, declared name for
        // name from Apple's documentation and scriptable by tests (ARCHITECTURE §7). An Apple build never links it
        // (the conditions below) and its sources are empty where AuthenticationServices exists.
        .target(
            name: "AppleFrameworkStandIns", dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings),
        // The SDK core: runs everywhere (Foundation + swift-crypto only; the stand-ins on Linux for the Apple types
        // its seed requests carry).
        .target(
            name: "Latchkey",
            dependencies: [
                "LatchkeyJOSE",
                .target(name: "AppleFrameworkStandIns", condition: .when(platforms: [.linux])),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log")
            ],
            swiftSettings: swiftSettings
        ),
        // The Apple layer: ASWebAuthenticationSession, ASAuthorizationController and the Keychain behind the SDK's seams.
        .target(
            name: "LatchkeyApple",
            dependencies: [
                "Latchkey",
                .product(name: "Crypto", package: "swift-crypto"),
                .target(name: "AppleFrameworkStandIns", condition: .when(platforms: [.linux]))
            ],
            swiftSettings: swiftSettings
        ),
        // SwiftUI: the provider, the auth state and the components. Each component's behaviour is a view model in
        // plain Swift (Observation, main actor; built and tested everywhere); the views, under
        // `#if canImport(SwiftUI)`, only lay them out.
        .target(
            name: "LatchkeySwiftUI",
            dependencies: ["Latchkey", "LatchkeyApple"],
            swiftSettings: swiftSettings
        ),
        // The identity server: Hummingbird 2 + GRDB (SQLite, WAL).
        .target(
            name: "LatchkeyServer",
            dependencies: [
                "LatchkeyJOSE",
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
                // The HTTP/1.1 client that connects to the address it checked (`PinnedHTTPClient`, review 3 R3-5).
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
                "Latchkey",
                "LatchkeySwiftUI",
                "LatchkeyServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log")
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "LatchkeyBenchmarks",
            dependencies: [
                "Latchkey", "LatchkeyJOSE", "LatchkeyServer", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio")
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "LatchkeyFuzz",
            dependencies: [
                "Latchkey", "LatchkeyJOSE", "LatchkeyServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log")
            ],
            swiftSettings: swiftSettings
        ),
        // What every test target shares and needs no server: `eventually` and the programmable HTTP client double
        // (`ProgrammableHTTPClient`). The SDK's unit tests use it alone; `LatchkeyTestSupport` re-exports it.
        .target(
            name: "LatchkeySDKTestSupport", dependencies: ["Latchkey"], path: "Tests/LatchkeySDKTestSupport",
            swiftSettings: swiftSettings),
        // What the test targets share, used by tests only: `LatchkeySDKTestSupport` (re-exported), the in-process
        // `TestServer`, `TestBrowser` (HTTP/1.1 over SwiftNIO), the hand-made OAuth client's steps, the stand-in Apple issuer
        // and the provider double. Its declarations are `package`: visible to this package's targets, in no product's API.
        .target(
            name: "LatchkeyTestSupport",
            dependencies: [
                "Latchkey", "LatchkeyJOSE", "LatchkeyServer", "LatchkeySDKTestSupport",
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
            dependencies: ["Latchkey", "LatchkeyJOSE", "LatchkeySDKTestSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // The server over loopback HTTP (some suites drive it with the SDK), its store, WebAuthn and configuration.
        .testTarget(
            name: "LatchkeyServerTests",
            dependencies: [
                "LatchkeyServer", "LatchkeyJOSE", "Latchkey", "LatchkeyTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "HummingbirdOTP", package: "hummingbird-auth"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // A loopback https server for `PinnedHTTPClient`'s TLS checks.
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
                "Latchkey", "LatchkeyJOSE", "LatchkeyServer", "LatchkeyTestSupport",
                .product(name: "HummingbirdOTP", package: "hummingbird-auth")
            ],
            swiftSettings: swiftSettings
        ),
        // LatchkeySwiftUI's view models against the in-process server.
        .testTarget(
            name: "LatchkeySwiftUITests",
            dependencies: [
                "Latchkey", "LatchkeySwiftUI", "LatchkeyServer", "LatchkeyTestSupport",
                .product(name: "HummingbirdOTP", package: "hummingbird-auth")
            ],
            swiftSettings: swiftSettings
        ),
        // LatchkeyApple's adapters, driven through the scripted stand-ins of Apple's frameworks against the in-process server.
        .testTarget(
            name: "LatchkeyAppleTests",
            dependencies: [
                "Latchkey", "LatchkeyApple", "LatchkeyJOSE", "LatchkeyServer", "LatchkeyTestSupport",
                .target(name: "AppleFrameworkStandIns", condition: .when(platforms: [.linux]))
            ],
            swiftSettings: swiftSettings
        )
    ],
    swiftLanguageModes: [.v6]
)
