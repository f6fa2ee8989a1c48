// swift-tools-version:6.0
// LocalAuth for Linux: Apple's LocalAuthentication API over a D-Bus system service.
import PackageDescription

let package = Package(
    name: "LocalAuth",
    products: [
        .library(name: "LocalAuthentication", targets: ["LocalAuthentication"]),
        .executable(name: "localauthd", targets: ["localauthd"]),
        .executable(name: "localauthctl", targets: ["localauthctl"]),
        .executable(name: "localauth-prompt", targets: ["localauth-prompt"]),
        // For the packages beside this one that are not shipped (Tools/Bench,
        // Examples): a package can only use another's products.
        .library(name: "LocalAuthCrypto", targets: ["LocalAuthCrypto"]),
        .library(name: "DBusCore", targets: ["DBusCore"]),
        .library(name: "LocalAuthShared", targets: ["LocalAuthShared"]),
        .library(name: "LocalAuthTPM", targets: ["LocalAuthTPM"]),
    ],
    dependencies: [
        // Test tooling (processes, the virtual sensor, swtpm): only the test
        // targets use it, so `swift build` does not build it.
        .package(name: "RigSupport", path: "Tools/RigSupport"),
    ],
    targets: [
        // C libraries Debian ships, each behind a module map and a shim header.
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        .systemLibrary(name: "CGLib", pkgConfig: "gio-2.0", providers: [.apt(["libglib2.0-dev"])]),
        .systemLibrary(name: "CFprint", pkgConfig: "libfprint-2", providers: [.apt(["libfprint-2-dev"])]),
        .systemLibrary(name: "CPolkit", pkgConfig: "polkit-gobject-1", providers: [.apt(["libpolkit-gobject-1-dev"])]),
        .systemLibrary(name: "CGtk", pkgConfig: "gtk4", providers: [.apt(["libgtk-4-dev"])]),
        .systemLibrary(name: "CArgon2", pkgConfig: "libargon2", providers: [.apt(["libargon2-dev"])]),
        .systemLibrary(name: "CSecret", pkgConfig: "libsecret-1", providers: [.apt(["libsecret-1-dev"])]),
        // Our own C shims.
        .target(name: "CDBusGLib", dependencies: ["CDBus", "CGLib"]),
        // dbus/*.xml compiled in as Swift strings, generated at build time by a
        // plugin of this package (Plugins/EmbedInterfaceXML says why) with its
        // tool embed-interface-xml (C).
        .target(name: "LocalAuthInterface", plugins: ["EmbedInterfaceXML"]),
        .plugin(name: "EmbedInterfaceXML", capability: .buildTool(), dependencies: ["embed-interface-xml"]),
        .executableTarget(name: "embed-interface-xml"),
        // libcrypto (libssl-dev) and tpm2-tss (libtss2-dev: ESAPI, marshalling, response-code
        // text, the TCTI loader), not linked but loaded at their first call: a service that
        // never touches a right never maps them (CLazyLibrary, BENCHMARKS.md, issue 25).
        .target(name: "CLazyLibrary"),
        .target(name: "COpenSSL", dependencies: ["CLazyLibrary"]),
        .target(name: "CTSS2", dependencies: ["CLazyLibrary"]),
        // GTK's macros and variadic functions, for the prompt agent only.
        .target(name: "CGtkShims", dependencies: ["CGtk"]),
        // gnome-keyring's password change through libsecret's encrypted session, for localauthctl keyring.
        .target(name: "CKeyringShim", dependencies: ["CSecret"]),

        // libc and GLib for everything else: crash-safe files, permission
        // checks, accounts, hex, SHA-256, logging, the error protocol.
        .target(name: "LocalAuthSystem", dependencies: ["CGLib"]),
        // Our D-Bus layer over libdbus, shared by the service and the client.
        .target(name: "DBusCore", dependencies: ["CDBus", "CGLib", "CDBusGLib", "LocalAuthSystem"]),
        // Names, raw values and tables of the contract: pure Swift.
        .target(name: "LocalAuthShared"),
        // The service as a library: callers, polkit, sensor, store.
        .target(name: "LocalAuthService", dependencies: [
            "DBusCore", "LocalAuthShared", "CFprint", "CPolkit", "CGLib", "LocalAuthInterface",
            "LocalAuthCrypto", "LocalAuthRights", "LocalAuthSystem",
        ]),
        .executableTarget(name: "localauthd", dependencies: ["DBusCore", "LocalAuthService", "LocalAuthRights"]),
        // The client library with Apple's API, and the tool over it.
        .target(name: "LocalAuthentication", dependencies: ["DBusCore", "LocalAuthShared", "LocalAuthCrypto"]),
        .executableTarget(name: "localauthctl", dependencies: ["LocalAuthentication", "LocalAuthShared", "LocalAuthKeyring", "LocalAuthCrypto"]),
        // The login keyring's client side (docs/KEYRING.md): the password's Argon2id key, gnome-keyring's interface.
        .target(name: "LocalAuthKeyring", dependencies: ["CArgon2", "CKeyringShim", "LocalAuthCrypto"]),
        // The system sheet: a GTK 4 prompt agent in the person's desktop session.
        .executableTarget(name: "localauth-prompt", dependencies: ["DBusCore", "LocalAuthShared", "CGtk", "CGtkShims"]),
        // Cryptography over OpenSSL's EVP API, for the service and the client library.
        .target(name: "LocalAuthCrypto", dependencies: ["COpenSSL", "LocalAuthSystem"]),
        // Rights and secrets at rest: key protection, the right file, its storage (for the service).
        .target(name: "LocalAuthRights", dependencies: ["LocalAuthCrypto", "LocalAuthTPM", "LocalAuthShared", "LocalAuthSystem"]),
        // A TPM 2.0 through tpm2-tss: sealed data and P-256 keys that never leave it (docs/TPM.md).
        .target(name: "LocalAuthTPM", dependencies: ["CTSS2", "LocalAuthCrypto", "LocalAuthSystem"]),

        .testTarget(name: "DBusCoreTests", dependencies: ["DBusCore"]),
        .testTarget(name: "LocalAuthSharedTests", dependencies: ["LocalAuthShared"]),
        .testTarget(name: "LocalAuthenticationTests", dependencies: ["LocalAuthentication"]),
        // The service's pure parts (the print file format), without a bus.
        .testTarget(name: "LocalAuthServiceTests", dependencies: ["LocalAuthService", "LocalAuthShared", "LocalAuthRights", "DBusCore",
                                                                "LocalAuthCrypto"]),
        .testTarget(name: "LocalAuthCryptoTests", dependencies: ["LocalAuthCrypto", "LocalAuthKeyring"]),
        .testTarget(name: "LocalAuthRightsTests", dependencies: ["LocalAuthRights", "LocalAuthCrypto"]),
        // Against a real software TPM (swtpm), started and killed by the tests.
        .testTarget(name: "LocalAuthTPMTests", dependencies: ["LocalAuthTPM", "LocalAuthRights", "LocalAuthCrypto",
                                                           .product(name: "RigSupport", package: "RigSupport")]),
        .testTarget(name: "EndToEndTests", dependencies: ["LocalAuthentication", "DBusCore", "LocalAuthShared", "LocalAuthCrypto", "LocalAuthKeyring",
                                                         .product(name: "RigSupport", package: "RigSupport")]),
    ],
    swiftLanguageModes: [.v6]
)
