// swift-tools-version:6.2
import PackageDescription

// The Latchkey SDK: what an app adds. It depends on swift-crypto and swift-log alone; the identity server, the `latchkey`
// command, the benchmarks, the fuzzers and every test live in the package under `Server/`, which depends on this one by
// path (docs/architecture.md, "Two packages").

// Strict concurrency is the Swift 6 language mode default; these keep the code honest about imports and existentials.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

var products: [Product] = [
    .library(name: "Latchkey", targets: ["Latchkey"]),
    .library(name: "LatchkeyJOSE", targets: ["LatchkeyJOSE"]),
    .library(name: "LatchkeyApple", targets: ["LatchkeyApple"]),
    .library(name: "LatchkeySwiftUI", targets: ["LatchkeySwiftUI"])
]
#if os(Linux)
// Linux only: the scripted stand-ins of AuthenticationServices and Security, for tests that drive LatchkeyApple.
products.append(.library(name: "AppleFrameworkStandIns", targets: ["AppleFrameworkStandIns"]))
#endif

var dependencies: [Package.Dependency] = [
    .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
    .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2")
]
// `swift package generate-documentation` (the DocC catalogs of Latchkey, LatchkeyApple and LatchkeySwiftUI) only when
// asked for, so an app's Package.resolved never lists the plugin: LATCHKEY_DOCC=1 swift package generate-documentation.
if Context.environment["LATCHKEY_DOCC"] != nil {
    dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}

let package = Package(
    name: "Latchkey",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .visionOS(.v1)],
    products: products,
    dependencies: dependencies,
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
        // name from Apple's documentation and scriptable by tests. An Apple build never links it (the conditions below)
        // and its sources are empty where AuthenticationServices exists.
        .target(
            name: "AppleFrameworkStandIns", dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings),
        // The SDK core: runs everywhere (Foundation + swift-crypto only; the stand-ins on Linux for the Apple types
        // its compatibility requests carry).
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
                .product(name: "Logging", package: "swift-log"),
                .target(name: "AppleFrameworkStandIns", condition: .when(platforms: [.linux]))
            ],
            swiftSettings: swiftSettings
        ),
        // SwiftUI: the provider, the auth state and the components. Each component's behaviour is a view model in
        // plain Swift (Observation, main actor; built and tested everywhere); the views, under
        // `#if canImport(SwiftUI)`, only lay them out.
        .target(
            name: "LatchkeySwiftUI",
            dependencies: ["Latchkey", "LatchkeyApple", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        )
    ],
    swiftLanguageModes: [.v6]
)
