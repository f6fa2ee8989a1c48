// swift-tools-version:6.0
// localauth-bench: localauthd beside Debian's fprintd (BENCHMARKS.md). A
// package of its own so that the product's build never builds it or links
// tpm2-tss for it; `make bench` builds the root package (the daemon as
// shipped) and this one, and passes the daemon with --localauthd.
import PackageDescription

let package = Package(
    name: "LocalAuthBench",
    dependencies: [
        .package(name: "LocalAuth", path: "../.."),
        .package(name: "RigSupport", path: "../RigSupport"),
    ],
    targets: [
        .executableTarget(
            name: "localauth-bench",
            dependencies: [
                .product(name: "DBusCore", package: "LocalAuth"),
                .product(name: "LocalAuthShared", package: "LocalAuth"),
                .product(name: "LocalAuthTPM", package: "LocalAuth"),
                .product(name: "LocalAuthCrypto", package: "LocalAuth"),
                .product(name: "RigSupport", package: "RigSupport"),
            ]),
        // An app's preflight through the Swift library, in a process of its own
        // (the bench runs it on its rig; c/app-preflight.c is the C library's).
        .executableTarget(
            name: "localauth-app-preflight",
            dependencies: [.product(name: "LocalAuthentication", package: "LocalAuth")]),
    ],
    swiftLanguageModes: [.v6]
)
