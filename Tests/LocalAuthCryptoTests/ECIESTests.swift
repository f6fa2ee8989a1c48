@testable import LocalAuthCrypto
import Foundation
import XCTest

/// Apple's ECIES (`.eciesEncryptionCofactorVariableIVX963SHA256AESGCM`):
/// a ciphertext made on Apple's platform opens, and the construction step
/// by step matches the `openssl` tool.
final class ECIESTests: XCTestCase {
    private func assertCode(_ body: @autoclosure () throws -> some Any, _ expected: CryptoError.Code,
                            _ message: String = "", file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsCode(try body(), expected, code: { (error: CryptoError) in error.code }, message, file: file, line: line)
    }

    func testRoundTrip() throws {
        let key = try P256.PrivateKey()
        for message in [[], Array("hello".utf8), try SecureRandom.bytes(5000)] as [[UInt8]] {
            let ciphertext = try ECIES.encrypt(message, to: key.publicKey)
            XCTAssertEqual(ciphertext.count, 65 + message.count + 16)
            XCTAssertEqual(try ECIES.decrypt(ciphertext, with: key), message)
            XCTAssertEqual(try key.decrypt(ciphertext, algorithm: .eciesEncryptionCofactorVariableIVX963SHA256AESGCM), message)
        }
        let viaAlgorithm = try key.publicKey.encrypt([1, 2], algorithm: .eciesEncryptionStandardVariableIVX963SHA256AESGCM)
        XCTAssertEqual(try key.decrypt(viaAlgorithm, algorithm: .eciesEncryptionCofactorVariableIVX963SHA256AESGCM), [1, 2])
    }

    func testDamageAndTheWrongKeyAreRefused() throws {
        let key = try P256.PrivateKey()
        let ciphertext = try ECIES.encrypt(Array("secret".utf8), to: key.publicKey)
        assertCode(try ECIES.decrypt(ciphertext, with: P256.PrivateKey()), .authenticationFailure, "another key")
        for index in 65..<ciphertext.count {
            var damaged = ciphertext
            damaged[index] ^= 0x80
            assertCode(try ECIES.decrypt(damaged, with: key), .authenticationFailure, "byte \(index)")
        }
        // A damaged ephemeral point is off the curve (or another point: then the tag fails).
        for index in 1..<65 {
            var damaged = ciphertext
            damaged[index] ^= 0x01
            XCTAssertThrowsError(try ECIES.decrypt(damaged, with: key), "point byte \(index)")
        }
        assertCode(try ECIES.decrypt(Array(ciphertext.prefix(80)), with: key), .invalidInput, "too short")
        var badPoint = ciphertext
        badPoint[0] = 0x02
        assertCode(try ECIES.decrypt(badPoint, with: key), .invalidKey, "compressed prefix")
    }

    /// A ciphertext made by Apple's `SecKeyCreateEncryptedData` with
    /// `.eciesEncryptionCofactorVariableIVX963SHA256AESGCM` for the message
    /// "P256-SHA256-VIV", and its P-256 key (SEC1 DER), as published in the
    /// Go package github.com/jedda/ECIES, ecies_test.go,
    /// TestExternalDecryptSuccess, case "P256-SHA256-VIV".
    func testAppleCiphertextOpens() throws {
        let sec1Key = "MHcCAQEEIHGhxnpu3kG/nW5ozDZJ+TTFQvL6MynCcQWD6jHV4p0UoAoGCCqGSM49AwEHoUQDQgAEzgFYw3Rqc72IIYHV7JH6M245n/nLnxyre1A7sc5nOt31ZyfJQLXGs4dY0cggne28ueXHID5lKz1JNChY49NHYg=="
        let appleCiphertext = "BI6sBCGyf916GQSV3DHOvmFxOmzbV9pq08wcOdKaepP2/Qtepj9M71dYkzXf6OqIstDyyVIxfnAMfUpxZzoCHDbalYRzzwhqHwg7K6RNl1F29PVdLNtJH498yJSfloW/"
        let tool = try OpenSSLTool()
        defer { tool.remove() }
        try tool.write("sec1.der", Array(Data(base64Encoded: sec1Key)!))
        // Our keys load from PKCS#8 only; the tool converts SEC1 to PKCS#8.
        let converted = try tool.run(["pkcs8", "-topk8", "-nocrypt", "-inform", "DER", "-in", "sec1.der", "-outform", "DER", "-out", "key.der"])
        XCTAssertEqual(converted.status, 0, converted.output)
        let key = try P256.PrivateKey(derRepresentation: tool.read("key.der"))
        let plaintext = try ECIES.decrypt(Array(Data(base64Encoded: appleCiphertext)!), with: key)
        XCTAssertEqual(String(decoding: plaintext, as: UTF8.self), "P256-SHA256-VIV")
    }

    /// Steps 2–4 of the construction redone with the tool: `pkeyutl -derive`
    /// for Z, `kdf X963KDF` with the ephemeral point as shared info for
    /// key ‖ IV; the AES-128-GCM part (which `openssl enc` cannot do) must
    /// then open our ciphertext with exactly that key and 16-byte IV.
    func testConstructionMatchesTheOpenSSLCommandLine() throws {
        let tool = try OpenSSLTool()
        defer { tool.remove() }
        let recipient = try P256.PrivateKey(), ephemeral = try P256.PrivateKey()
        let message = Array("checked step by step".utf8)
        let ciphertext = try ECIES.encrypt(message, to: recipient.publicKey, ephemeralKey: ephemeral)
        XCTAssertEqual(Array(ciphertext.prefix(65)), ephemeral.publicKey.x963Representation)

        try tool.write("ephemeral.der", ephemeral.derRepresentation)
        try tool.write("recipient.der", recipient.publicKey.derRepresentation)
        let derived = try tool.run(["pkeyutl", "-derive", "-keyform", "DER", "-inkey", "ephemeral.der",
                                    "-peerform", "DER", "-peerkey", "recipient.der", "-out", "z.bin"])
        XCTAssertEqual(derived.status, 0, derived.output)
        let z = try tool.read("z.bin")
        let kdf = try tool.run(["kdf", "-keylen", "32", "-kdfopt", "digest:SHA256", "-kdfopt", "hexkey:\(hex(z))",
                                "-kdfopt", "hexinfo:\(hex(ephemeral.publicKey.x963Representation))", "X963KDF"])
        XCTAssertEqual(kdf.status, 0, kdf.output)
        let keyAndIV = OpenSSLTool.bytes(fromColonHex: kdf.output)
        XCTAssertEqual(keyAndIV.count, 32)

        let body = Array(ciphertext.dropFirst(65))
        let opened = try AESGCM.decrypt(Array(body.dropLast(16)), tag: Array(body.suffix(16)),
                                        key: Array(keyAndIV.prefix(16)), iv: Array(keyAndIV.suffix(16)), associatedData: [])
        XCTAssertEqual(opened, message)
        // And the same with a zero IV (the legacy algorithms) does not open: the IV really is the KDF's.
        XCTAssertThrowsError(try AESGCM.decrypt(Array(body.dropLast(16)), tag: Array(body.suffix(16)),
                                                key: Array(keyAndIV.prefix(16)), iv: [UInt8](repeating: 0, count: 16), associatedData: []))
    }
}
