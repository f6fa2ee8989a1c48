// swift-tools-version:6.0
// Processes, the virtual sensor and swtpm for the end-to-end tests and the
// benchmark: tooling, not part of what LocalAuth ships. The root package
// depends on it by path for its tests only (`swift build` of the root does
// not build it); Tools/Bench uses it too.
import PackageDescription

let package = Package(
    name: "RigSupport",
    products: [
        .library(name: "RigSupport", targets: ["RigSupport"])
    ],
    targets: [
        // glibc's posix_spawn extensions, which Swift's Glibc module does not declare.
        .target(name: "CRigSpawn"),
        .target(name: "RigSupport", dependencies: ["CRigSpawn"]),
        .testTarget(name: "RigSupportTests", dependencies: ["RigSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
