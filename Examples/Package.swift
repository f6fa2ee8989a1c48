// swift-tools-version:6.0
// Apple-style sample code over the LocalAuth package, the way any SwiftPM
// user would depend on it (by path here; from git the same line with `url:`).
// The end-to-end tests build this package and run its programs against the
// rig (`make examples`). Examples/UnlockApp is a package of its own.
import PackageDescription

let package = Package(
    name: "LocalAuthExamples",
    dependencies: [
        .package(name: "LocalAuth", path: "..")
    ],
    targets: [
        .executableTarget(
            name: "BiometricPreflight", dependencies: [.product(name: "LocalAuthentication", package: "LocalAuth")],
            path: "BiometricPreflight", swiftSettings: [.swiftLanguageMode(.v5)]),
        .executableTarget(
            name: "BiometricAuthManager", dependencies: [.product(name: "LocalAuthentication", package: "LocalAuth")],
            path: "BiometricAuthManager", swiftSettings: [.swiftLanguageMode(.v5)]),
        .executableTarget(
            name: "AsyncUnlock", dependencies: [.product(name: "LocalAuthentication", package: "LocalAuth")],
            path: "AsyncUnlock"),
        // Rights: a vault whose key is a right's secret (docs/RIGHTS.md).
        .executableTarget(
            name: "SecretVault",
            dependencies: [
                .product(name: "LocalAuthentication", package: "LocalAuth"),
                .product(name: "LocalAuthCrypto", package: "LocalAuth"),
            ],
            path: "SecretVault"),
    ],
    swiftLanguageModes: [.v6]
)
