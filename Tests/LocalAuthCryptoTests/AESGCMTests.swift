@testable import LocalAuthCrypto
import XCTest

/// AES-GCM: known answers, round trips, and every kind of tampering refused.
final class AESGCMTests: XCTestCase {
    private func assertCode(_ body: @autoclosure () throws -> some Any, _ expected: CryptoError.Code,
                            _ message: String = "", file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsCode(try body(), expected, code: { (error: CryptoError) in error.code }, message, file: file, line: line)
    }

    /// McGrew & Viega, "The Galois/Counter Mode of Operation", test cases 2 (AES-128) and 14 (AES-256).
    func testKnownAnswers() throws {
        let zeroNonce = [UInt8](repeating: 0, count: 12)
        let block = [UInt8](repeating: 0, count: 16)
        let box128 = try AESGCM.seal(block, key: [UInt8](repeating: 0, count: 16), nonce: zeroNonce)
        XCTAssertEqual(hex(box128.ciphertext), "0388dace60b6a392f328c2b971b2fe78")
        XCTAssertEqual(hex(box128.tag), "ab6e47d42cec13bdf53a67b21257bddf")
        let box256 = try AESGCM.seal(block, key: [UInt8](repeating: 0, count: 32), nonce: zeroNonce)
        XCTAssertEqual(hex(box256.ciphertext), "cea7403d4d606b6e074ec5d3baf39d18")
        XCTAssertEqual(hex(box256.tag), "d0d1c8a799996bf0265b98b5d48ab919")
    }

    func testRoundTripWithAndWithoutAssociatedData() throws {
        let key = try SecureRandom.bytes(32)
        for plaintext in [[], [1], Array("a secret".utf8), try SecureRandom.bytes(70_000)] as [[UInt8]] {
            for ad in [[], Array("owner".utf8)] as [[UInt8]] {
                let box = try AESGCM.seal(plaintext, key: key, associatedData: ad)
                XCTAssertEqual(box.nonce.count, 12)
                XCTAssertEqual(box.ciphertext.count, plaintext.count)
                XCTAssertEqual(try AESGCM.open(box, key: key, associatedData: ad), plaintext)
                XCTAssertEqual(try AESGCM.open(AESGCM.SealedBox(combined: box.combined), key: key, associatedData: ad), plaintext)
            }
        }
        let key128 = try SecureRandom.bytes(16)
        XCTAssertEqual(try AESGCM.open(AESGCM.seal([7, 8, 9], key: key128), key: key128), [7, 8, 9])
    }

    func testNoncesAreFresh() throws {
        let key = try SecureRandom.bytes(32)
        let first = try AESGCM.seal([1, 2, 3], key: key), second = try AESGCM.seal([1, 2, 3], key: key)
        XCTAssertNotEqual(first.nonce, second.nonce)
        XCTAssertNotEqual(first.ciphertext, second.ciphertext)
    }

    func testEveryFlippedBitIsRefused() throws {
        let key = try SecureRandom.bytes(32), ad = Array("uid 1000".utf8)
        let combined = try AESGCM.seal(Array("top secret".utf8), key: key, associatedData: ad).combined
        for index in combined.indices {
            var damaged = combined
            damaged[index] ^= 0x01
            assertCode(try AESGCM.open(AESGCM.SealedBox(combined: damaged), key: key, associatedData: ad), .authenticationFailure, "byte \(index)")
        }
    }

    func testWrongKeyOrAssociatedDataIsRefused() throws {
        let key = try SecureRandom.bytes(32)
        let box = try AESGCM.seal([1, 2, 3], key: key, associatedData: [1])
        assertCode(try AESGCM.open(box, key: SecureRandom.bytes(32), associatedData: [1]), .authenticationFailure)
        assertCode(try AESGCM.open(box, key: key, associatedData: [2]), .authenticationFailure)
        assertCode(try AESGCM.open(box, key: key), .authenticationFailure)
    }

    func testBadSizesAreNamed() throws {
        assertCode(try AESGCM.seal([1], key: [UInt8](repeating: 0, count: 24)), .invalidKey)
        assertCode(try AESGCM.seal([1], key: [UInt8](repeating: 0, count: 32), nonce: [1, 2, 3]), .invalidInput)
        assertCode(try AESGCM.SealedBox(combined: [UInt8](repeating: 0, count: 27)), .invalidInput)
    }

    func testTheErrorCarriesOpenSSLsReason() throws {
        let key = try SecureRandom.bytes(32)
        let box = try AESGCM.seal([1], key: key)
        do {
            _ = try AESGCM.open(box, key: key, associatedData: [9])
            XCTFail("opened")
        } catch {
            XCTAssertEqual(error.code, .authenticationFailure)
            XCTAssertTrue(error.message.contains("tag check"), error.message)
        }
    }
}
