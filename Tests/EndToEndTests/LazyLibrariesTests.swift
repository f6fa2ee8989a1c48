import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// Issue 25: libcrypto and tpm2-tss are loaded when a right is first used,
/// also when the TPM is the key backend. On 4dddfda both were linked (mapped
/// by every start), and the start-up log's probe made the TPM create its
/// storage primary key before the service took its name.
final class LazyLibrariesTests: TPMRigTestCase, @unchecked Sendable {
    override func setUpWithError() throws {
        // The library reads its app id once per process, at its first use of
        // LARightStore: the same id as RightsTests', whichever class runs first.
        setenv("LOCALAUTH_APP_ID", RightsTests.appID, 1)
        try super.setUpWithError()
    }

    /// The service's mappings, read to the end (Foundation's
    /// String(contentsOfFile:) stops after the first page of a /proc file).
    private func maps() throws -> String {
        let handle = try XCTUnwrap(FileHandle(forReadingAtPath: "/proc/\(service.child.pid)/maps"))
        defer { try? handle.close() }
        return String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
    }

    func testWithATPMBackendNeitherLibraryIsMappedUntilARightIsUsed() async throws {
        let tpm = try restartServiceOnATPM()
        try await enroll(as: "owner-finger")
        present("owner-finger")
        let result = await evaluate()
        XCTAssertTrue(result.succeeded, "\(result)\n\(service.log)")
        let before = try maps()
        XCTAssertTrue(before.contains("libfprint-2.so"), "the maps were read: \(before.prefix(400))")
        for library in ["libtss2-", "libcrypto.so"] {
            XCTAssertFalse(before.contains(library), "\(library) mapped before any right was used")
        }

        // A right whose keys are in the TPM: both libraries load, and it works.
        let secret = Data("kept in the TPM".utf8)
        let right = try await LARightStore.shared.saveRight(LARight(requirement: .biometry), identifier: "lazy-tpm", secret: secret)
        present("owner-finger")
        try await right.authorize(localizedReason: "Read the test secret")
        let loaded = try await right.secret.loadData()
        XCTAssertEqual(loaded, secret)
        let after = try maps()
        for library in ["libtss2-esys.so", "libcrypto.so"] {
            XCTAssertTrue(after.contains(library), "\(library) not mapped after a TPM right was used")
        }
        XCTAssertTrue(service.log.contains("tpm2 (\(tpm.tcti))"), service.log)
    }
}
