import Foundation
import LocalAuthCrypto
@testable import LocalAuthRights
import XCTest

/// The right file: what is written is read back; every damage is named; the
/// secret and private key never appear in the clear; parts do not move.
final class RightRecordTests: XCTestCase {
    private let protector = try! SoftwareKeyProtector(machineKey: [UInt8](repeating: 7, count: 32))
    private let secret = Array("correct horse battery staple".utf8)

    private func make(_ identifier: String = "vault", secret: [UInt8]? = nil,
                      requirement: RightRequirement = .biometry) throws -> RightRecord {
        try RightRecord.create(owner: owner(identifier), requirement: requirement, secret: secret ?? self.secret,
                               created: 1_764_474_000, protector: protector)
    }

    func testRoundTrip() throws {
        let record = try make()
        let bytes = record.encode()
        XCTAssertEqual(Array(bytes.prefix(8)), Array("LARIGHT\n".utf8))
        let read = try RightRecord.decode(bytes)
        XCTAssertEqual(read.owner, try owner())
        XCTAssertEqual(read.requirement, .biometry)
        XCTAssertEqual(read.created, 1_764_474_000)
        XCTAssertEqual(read.backendName, "software")
        XCTAssertEqual(read.publicKeyPoint, record.publicKeyPoint)
        XCTAssertEqual(read.encode(), bytes)
        XCTAssertNoThrow(try read.verify(using: protector))
        XCTAssertEqual(try read.secret(using: protector), secret)
        let privateKey = try read.privateKey(using: protector)
        XCTAssertEqual(privateKey.publicKey, try read.publicKey)
        let signature = try privateKey.signature(for: [1, 2, 3])
        XCTAssertTrue(try read.publicKey.isValidSignature(signature, for: [1, 2, 3]))
    }

    /// Decoding keeps the public key's point, checked only to be on the
    /// curve: no stored property of a decoded right is a key, so ListRights
    /// builds none (its cost per right is the bench's ListRights curve,
    /// BENCHMARKS.md "Curves"). This was a ratio of two timings, which fails
    /// with OpenSSL 3.5 (Debian 13) and which this project's tests do not
    /// assert: speed is the bench's.
    func testDecodingKeepsThePointNotAKey() throws {
        let saved = try make("right")
        let decoded = try RightRecord.decode(saved.encode())
        let stored = Mirror(reflecting: decoded).children.map { type(of: $0.value) }
        XCTAssertFalse(stored.contains { $0 == P256.PublicKey.self || $0 == P256.PublicKey?.self }, "stored: \(stored)")
        XCTAssertEqual(decoded.publicKeyPoint, saved.publicKeyPoint)
        XCTAssertEqual(try decoded.publicKey.x963Representation, saved.publicKeyPoint, "built when used")
    }

    /// A point changed on disk: off the curve (any damage, almost surely)
    /// the right does not decode (ListRights names it damaged in the log and
    /// leaves it out); another valid point (only someone who can write the
    /// service's state) decodes, and the right then fails to open.
    func testAChangedPointIsDamageOrFailsToOpen() throws {
        let record = try make()
        var bytes = record.encode()
        let at = try XCTUnwrap(bytes.firstRange(of: record.publicKeyPoint)?.lowerBound)
        var damaged = bytes
        damaged[at + 64] ^= 0x01
        XCTAssertRightsError(try RightRecord.decode(damaged), .malformed)
        let other = try P256.PrivateKey().publicKey.x963Representation
        bytes.replaceSubrange(at..<at + 65, with: other)
        let swapped = try RightRecord.decode(bytes)
        XCTAssertEqual(swapped.publicKeyPoint, other)
        XCTAssertRightsError(try swapped.verify(using: protector), .authenticationFailed)
    }

    func testEveryRequirementAndNoSecretRoundTrip() throws {
        let digest = try SHA256.hash([9, 9, 9])
        for requirement in [.default, .biometry, .biometryCurrentSet(enrolledSetDigest: digest), .biometryOrPassword] as [RightRequirement] {
            let record = try RightRecord.create(owner: owner(), requirement: requirement, secret: nil, created: -5, protector: protector)
            let read = try RightRecord.decode(record.encode())
            XCTAssertEqual(read.requirement, requirement)
            XCTAssertEqual(read.created, -5)
            XCTAssertNil(try read.secret(using: protector))
        }
        let empty = try RightRecord.create(owner: owner(), requirement: .default, secret: [], created: 0, protector: protector)
        XCTAssertEqual(try RightRecord.decode(empty.encode()).secret(using: protector), [], "an empty secret is not no secret")
        XCTAssertRightsError(try RightRecord.create(owner: owner(), requirement: .biometryCurrentSet(enrolledSetDigest: [1]),
                                                    secret: nil, created: 0, protector: protector), .malformed)
    }

    func testEveryFlippedByteIsDetected() throws {
        let bytes = try make().encode()
        for index in bytes.indices {
            for pattern in [0x01, 0x80] as [UInt8] {
                var damaged = bytes
                damaged[index] ^= pattern
                XCTAssertThrowsError(try RightRecord.decode(damaged).verify(using: protector), "byte \(index) ^ \(pattern)") { error in
                    XCTAssertTrue(error is RightsError, "\(error)")
                }
            }
        }
    }

    func testDamageIsNamed() throws {
        let bytes = try make().encode()
        XCTAssertRightsError(try RightRecord.decode([]), .truncated)
        XCTAssertRightsError(try RightRecord.decode(Array(bytes.prefix(5))), .truncated)
        XCTAssertRightsError(try RightRecord.decode(Array("#!/bin/sh\n".utf8)), .badMagic)
        var version = bytes
        version[9] = 2
        XCTAssertRightsError(try RightRecord.decode(version), .unsupportedVersion)
        XCTAssertRightsError(try RightRecord.decode(Array(bytes.dropLast())), .truncated)
        XCTAssertRightsError(try RightRecord.decode(bytes + [0]), .malformed)
        XCTAssertRightsError(try RightRecord.decode(bytes + [UInt8](repeating: 0, count: RightLimits.fileBytes)), .oversize)
        var field = bytes
        field[14] = 0x02    // the identifier's tag
        XCTAssertRightsError(try RightRecord.decode(field), .malformed)
        var length = bytes
        length[15] = 0xff   // the identifier's length, now far past its limit
        XCTAssertRightsError(try RightRecord.decode(length), .oversize)
        // The header itself is intact but the sealed parts were made for another header.
        var created = bytes
        // After the fixed header: identifier (1+4+5), app id (1+4+17), uid (1+4+4), requirement (1+4+1), created's tag and length.
        let createdAt = 14 + 10 + 22 + 9 + 6 + 5
        created[createdAt + 7] ^= 1
        let forged = try RightRecord.decode(created)
        XCTAssertEqual(forged.created, 1_764_474_001)
        XCTAssertRightsError(try forged.verify(using: protector), .authenticationFailed, "the owner is intact, the header is not")
    }

    func testEveryTruncationIsRefused() throws {
        let bytes = try make().encode()
        for count in 0..<bytes.count {
            XCTAssertThrowsError(try RightRecord.decode(Array(bytes.prefix(count))), "\(count) bytes")
        }
    }

    func testNoPlaintextInTheFile() throws {
        let distinctive = try SecureRandom.bytes(64)
        let record = try make(secret: distinctive)
        let bytes = record.encode()
        XCTAssertFalse(contains(bytes, Array(distinctive.prefix(8))))
        XCTAssertFalse(contains(bytes, Array(distinctive.suffix(8))))
        let text = try make(secret: secret).encode()
        XCTAssertFalse(contains(text, Array("horse".utf8)))
        // The private scalar (after 02 01 01 04 20 in the PKCS#8 DER) appears nowhere.
        let der = try record.privateKey(using: protector).derRepresentation
        let marker: [UInt8] = [0x02, 0x01, 0x01, 0x04, 0x20]
        let start = try XCTUnwrap((0..<der.count - marker.count).first { Array(der[$0..<$0 + marker.count]) == marker }) + marker.count
        let scalar = Array(der[start..<start + 32])
        for window in stride(from: 0, through: 24, by: 8) {
            XCTAssertFalse(contains(bytes, Array(scalar[window..<window + 8])), "scalar bytes \(window)…")
        }
        XCTAssertFalse(contains(bytes, der))
    }

    func testPartsDoNotMoveBetweenRights() throws {
        let vault = try make("vault"), diary = try make("diary")
        // diary's header with vault's wrapped key and sealed parts.
        let mixed = RightRecord(owner: diary.owner, requirement: diary.requirement, created: diary.created, backendName: "software",
                                publicKeyPoint: diary.publicKeyPoint, header: diary.header, wrappedKey: vault.wrappedKey,
                                sealedSecret: vault.sealedSecret, sealedPrivateKey: vault.sealedPrivateKey)
        XCTAssertRightsError(try mixed.verify(using: protector), .unwrapFailed)
        // Its own key, but the other right's sealed parts.
        let swapped = RightRecord(owner: diary.owner, requirement: diary.requirement, created: diary.created, backendName: "software",
                                  publicKeyPoint: diary.publicKeyPoint, header: diary.header, wrappedKey: diary.wrappedKey,
                                  sealedSecret: vault.sealedSecret, sealedPrivateKey: vault.sealedPrivateKey)
        XCTAssertRightsError(try swapped.secret(using: protector), .authenticationFailed)
        // The secret's sealed bytes where the private key belongs.
        let crossed = RightRecord(owner: diary.owner, requirement: diary.requirement, created: diary.created, backendName: "software",
                                  publicKeyPoint: diary.publicKeyPoint, header: diary.header, wrappedKey: diary.wrappedKey,
                                  sealedSecret: diary.sealedPrivateKey, sealedPrivateKey: diary.sealedSecret)
        XCTAssertRightsError(try crossed.secret(using: protector), .authenticationFailed)
    }

    func testAnotherMachineOrBackendCannotOpen() throws {
        let record = try make()
        let elsewhere = try SoftwareKeyProtector(machineKey: SecureRandom.bytes(32))
        XCTAssertRightsError(try record.secret(using: elsewhere), .unwrapFailed)
        XCTAssertRightsError(try record.privateKey(using: OtherBackend()), .wrongBackend)
    }

    func testOwnersAreLoggedSafely() throws {
        let shown = try owner("line\nforged: root logged in" + String(repeating: "x", count: 100)).description
        XCTAssertFalse(shown.contains("\n"))
        XCTAssertTrue(shown.hasPrefix("uid 1000 app org.example.Notes right \"line?forged"), shown)
        XCTAssertLessThan(shown.utf8.count, 120)
    }

    func testLimitsAreNamed() throws {
        XCTAssertRightsError(try owner(String(repeating: "x", count: RightLimits.identifierBytes + 1)), .identifierTooLong)
        XCTAssertNoThrow(try owner(String(repeating: "é", count: RightLimits.identifierBytes / 2)))
        XCTAssertRightsError(try owner(app: String(repeating: "a", count: RightLimits.appIDBytes + 1)), .appIDTooLong)
        XCTAssertRightsError(try owner(""), .invalidName)
        XCTAssertRightsError(try owner(app: ""), .invalidName)
        XCTAssertRightsError(try owner("a\0b"), .invalidName)
        XCTAssertRightsError(try make(secret: [UInt8](repeating: 1, count: RightLimits.secretBytes + 1)), .secretTooLarge)
        let largest = try make(secret: [UInt8](repeating: 1, count: RightLimits.secretBytes))
        XCTAssertLessThanOrEqual(largest.encode().count, RightLimits.fileBytes)
        XCTAssertEqual(try RightRecord.decode(largest.encode()).secret(using: protector)?.count, RightLimits.secretBytes)
    }
}

/// A protector of another backend, to see rights refuse it.
private struct OtherBackend: KeyProtector {
    var backendName: String { "tpm2" }
    func wrap(_ key: [UInt8], context: KeyContext) throws(RightsError) -> [UInt8] { key }
    func unwrap(_ blob: [UInt8], context: KeyContext) throws(RightsError) -> [UInt8] { blob }
}
