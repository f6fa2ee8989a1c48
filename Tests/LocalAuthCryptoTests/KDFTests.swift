@testable import LocalAuthCrypto
import XCTest

/// The KDFs: a published answer, a definition recomputed by hand with
/// SHA-256, and the `openssl kdf` tool.
final class KDFTests: XCTestCase {
    /// RFC 5869, appendix A.1.
    func testHKDFKnownAnswer() throws {
        let okm = try KDF.hkdfSHA256(inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22),
                                     salt: Array(0x00...0x0c), info: Array(0xf0...0xf9), outputByteCount: 42)
        XCTAssertEqual(hex(okm), "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }

    /// X9.63: block i = SHA-256(Z ‖ i as 4 bytes big-endian ‖ sharedInfo), i from 1.
    func testX963IsTheANSIDefinition() throws {
        let z = try SecureRandom.bytes(32), info = try SecureRandom.bytes(65)
        let derived = try KDF.x963SHA256(sharedSecret: z, sharedInfo: info, outputByteCount: 48)
        let expected = try SHA256.hash(z + [0, 0, 0, 1] + info) + SHA256.hash(z + [0, 0, 0, 2] + info)
        XCTAssertEqual(derived, Array(expected.prefix(48)))
    }

    func testX963MatchesTheCommandLine() throws {
        let tool = try OpenSSLTool()
        defer { tool.remove() }
        let z = try SecureRandom.bytes(32), info = try SecureRandom.bytes(65)
        let result = try tool.run(["kdf", "-keylen", "32", "-kdfopt", "digest:SHA256", "-kdfopt", "hexkey:\(hex(z))",
                                   "-kdfopt", "hexinfo:\(hex(info))", "X963KDF"])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(try KDF.x963SHA256(sharedSecret: z, sharedInfo: info, outputByteCount: 32),
                       OpenSSLTool.bytes(fromColonHex: result.output))
    }

    func testSHA256KnownAnswer() throws {
        XCTAssertEqual(hex(try SHA256.hash(Array("abc".utf8))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(hex(try SHA256.hash([])), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    func testRandomBytes() throws {
        XCTAssertEqual(try SecureRandom.bytes(0), [])
        let a = try SecureRandom.bytes(32), b = try SecureRandom.bytes(32)
        XCTAssertEqual(a.count, 32)
        XCTAssertNotEqual(a, b)
    }
}
