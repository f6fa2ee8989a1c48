// swift-tools-version:6.0
// An app that uses LocalAuthentication from the LocalAuth package, the way
// any SwiftPM user would: a dependency on the package (here by path; from a
// git URL it is the same line with `url:` and a version).
import PackageDescription

let package = Package(
    name: "UnlockApp",
    dependencies: [
        .package(name: "LocalAuth", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "UnlockApp",
            dependencies: [.product(name: "LocalAuthentication", package: "LocalAuth")]
        ),
    ]
)
