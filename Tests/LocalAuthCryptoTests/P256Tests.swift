@testable import LocalAuthCrypto
import Foundation
import XCTest

/// P-256 keys, ECDSA and ECDH, checked against the `openssl` tool both ways.
final class P256Tests: XCTestCase {
    private var tool: OpenSSLTool!

    override func setUpWithError() throws { tool = try OpenSSLTool() }
    override func tearDown() { tool.remove() }

    private func assertCode(_ body: @autoclosure () throws -> some Any, _ expected: CryptoError.Code,
                            _ message: String = "", file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsCode(try body(), expected, code: { (error: CryptoError) in error.code }, message, file: file, line: line)
    }

    func testPKCS8RoundTripAndTheToolReadsIt() throws {
        let key = try P256.PrivateKey()
        let der = try key.derRepresentation
        let again = try P256.PrivateKey(derRepresentation: der)
        XCTAssertEqual(again.publicKey, key.publicKey)
        XCTAssertEqual(key.publicKey.x963Representation.count, 65)
        XCTAssertEqual(key.publicKey.x963Representation.first, 0x04)

        try tool.write("key.der", der)
        let result = try tool.run(["pkey", "-inform", "DER", "-in", "key.der", "-pubout", "-outform", "DER", "-out", "pub.der"])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(try P256.PublicKey(derRepresentation: tool.read("pub.der")), key.publicKey)
        XCTAssertEqual(try tool.read("pub.der"), try key.publicKey.derRepresentation)
    }

    func testASignatureMadeHereVerifiesWithTheTool() throws {
        let key = try P256.PrivateKey()
        let message = Array("sign me, the tool will check".utf8)
        let signature = try key.signature(for: message)
        XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message))
        try tool.write("msg", message)
        try tool.write("sig.der", signature)
        try pem(key.publicKey.derRepresentation, "PUBLIC KEY").write(toFile: tool.path("pub.pem"), atomically: true, encoding: .utf8)
        let good = try tool.run(["dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "msg"])
        XCTAssertEqual(good.status, 0, good.output)
        XCTAssertTrue(good.output.contains("Verified OK"), good.output)

        try tool.write("msg", message + [0])
        let bad = try tool.run(["dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "msg"])
        XCTAssertNotEqual(bad.status, 0, bad.output)
    }

    func testASignatureMadeByTheToolVerifiesHere() throws {
        XCTAssertEqual(try tool.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "key.pem"]).status, 0)
        XCTAssertEqual(try tool.run(["pkey", "-in", "key.pem", "-pubout", "-outform", "DER", "-out", "pub.der"]).status, 0)
        let message = Array("made by openssl".utf8)
        try tool.write("msg", message)
        XCTAssertEqual(try tool.run(["dgst", "-sha256", "-sign", "key.pem", "-out", "sig.der", "msg"]).status, 0)
        let publicKey = try P256.PublicKey(derRepresentation: tool.read("pub.der"))
        let signature = try tool.read("sig.der")
        XCTAssertTrue(publicKey.isValidSignature(signature, for: message))
        XCTAssertTrue(try publicKey.verify(signature, for: message, algorithm: .ecdsaSignatureMessageX962SHA256))
        XCTAssertFalse(publicKey.isValidSignature(signature, for: message + [1]))
        var damaged = signature
        damaged[damaged.count - 1] ^= 1
        XCTAssertFalse(publicKey.isValidSignature(damaged, for: message))
        XCTAssertFalse(publicKey.isValidSignature([], for: message))
        XCTAssertFalse(publicKey.isValidSignature([0x30, 0x00], for: message))
        // The tool's PKCS#8 key loads too, and is the same key.
        XCTAssertEqual(try tool.run(["pkcs8", "-topk8", "-nocrypt", "-in", "key.pem", "-outform", "DER", "-out", "key.der"]).status, 0)
        XCTAssertEqual(try P256.PrivateKey(derRepresentation: tool.read("key.der")).publicKey, publicKey)
    }

    func testDigestSignaturesAreSignaturesOfTheMessage() throws {
        let key = try P256.PrivateKey()
        let message = Array("digest first".utf8)
        let digest = try SHA256.hash(message)
        let signature = try key.sign(digest, algorithm: .ecdsaSignatureDigestX962SHA256)
        XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message))
        XCTAssertTrue(try key.publicKey.verify(signature, for: digest, algorithm: .ecdsaSignatureDigestX962SHA256))
        XCTAssertTrue(key.publicKey.isValidSignature(try key.signature(for: message), forDigest: digest))
        assertCode(try key.signature(forDigest: [1, 2, 3]), .invalidInput)
    }

    func testECDHMatchesTheTool() throws {
        let ours = try P256.PrivateKey(), theirs = try P256.PrivateKey()
        let secret = try ours.sharedSecretFromKeyAgreement(with: theirs.publicKey)
        XCTAssertEqual(secret.count, 32)
        XCTAssertEqual(try theirs.sharedSecretFromKeyAgreement(with: ours.publicKey), secret)
        XCTAssertEqual(try ours.exchangeKeys(with: theirs.publicKey, algorithm: .ecdhKeyExchangeCofactor), secret)
        XCTAssertEqual(try ours.exchangeKeys(with: theirs.publicKey, algorithm: .ecdhKeyExchangeStandardX963SHA256,
                                             requestedSize: 20, sharedInfo: [1, 2]),
                       Array(try SHA256.hash(secret + [0, 0, 0, 1, 1, 2]).prefix(20)))
        assertCode(try ours.exchangeKeys(with: theirs.publicKey, algorithm: .ecdhKeyExchangeCofactorX963SHA256), .invalidInput)

        try tool.write("ours.der", ours.derRepresentation)
        try tool.write("theirs.der", theirs.publicKey.derRepresentation)
        let result = try tool.run(["pkeyutl", "-derive", "-keyform", "DER", "-inkey", "ours.der",
                                   "-peerform", "DER", "-peerkey", "theirs.der", "-out", "shared.bin"])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(try tool.read("shared.bin"), secret)
    }

    func testInvalidPublicKeysAreRefused() throws {
        let good = try P256.PrivateKey().publicKey.x963Representation
        var offCurve = good
        offCurve[64] ^= 0x01
        var compressed = Array(good.prefix(33))
        compressed[0] = 0x02 | (good[64] & 1)
        let fieldPrime = bytes(hex: "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("the point at infinity", [0x00]),
            ("compressed", compressed),
            ("one byte short", Array(good.dropLast())),
            ("one byte long", good + [0]),
            ("wrong prefix", [0x05] + good.dropFirst()),
            ("not on the curve", offCurve),
            ("all zero coordinates", [0x04] + [UInt8](repeating: 0, count: 64)),
            ("x equal to the field prime", [0x04] + fieldPrime + good.suffix(32)),
        ]
        for (name, bytes) in cases {
            assertCode(try P256.PublicKey(x963Representation: bytes), .invalidKey, name)
            // The quick check the rights store lists with refuses the same.
            XCTAssertFalse(P256.isPublicPoint(bytes), name)
        }
        XCTAssertTrue(P256.isPublicPoint(good))
        // The point with y negated (p − y) is on the curve too: both checks accept it.
        var negated = good
        var borrow = 0
        for index in (1...32).reversed() {
            let difference = Int(fieldPrime[index - 1]) - Int(good[32 + index]) - borrow
            negated[32 + index] = UInt8((difference + 256) % 256)
            borrow = difference < 0 ? 1 : 0
        }
        XCTAssertTrue(P256.isPublicPoint(negated))
        XCTAssertNoThrow(try P256.PublicKey(x963Representation: negated))
        assertCode(try P256.PublicKey(derRepresentation: [0x30, 0x03, 0x02, 0x01, 0x00]), .invalidKey, "junk DER")
        assertCode(try P256.PrivateKey(derRepresentation: [0x30, 0x03, 0x02, 0x01, 0x00]), .invalidKey, "junk PKCS#8")
        assertCode(try P256.PrivateKey(derRepresentation: P256.PrivateKey().derRepresentation + [0]), .invalidKey, "trailing byte")
        XCTAssertEqual(try P256.PublicKey(x963Representation: good).x963Representation, good)
    }

    func testOtherCurvesAreRefused() throws {
        XCTAssertEqual(try tool.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384",
                                     "-outform", "DER", "-out", "p384.der"]).status, 0)
        XCTAssertEqual(try tool.run(["pkey", "-inform", "DER", "-in", "p384.der", "-pubout", "-outform", "DER", "-out", "p384pub.der"]).status, 0)
        assertCode(try P256.PrivateKey(derRepresentation: tool.read("p384.der")), .invalidKey)
        assertCode(try P256.PublicKey(derRepresentation: tool.read("p384pub.der")), .invalidKey)
    }

    func testAlgorithmsKeepApplesNames() throws {
        XCTAssertEqual(KeyAlgorithm(rawValue: "algid:sign:ECDSA:message-X962:SHA256"), .ecdsaSignatureMessageX962SHA256)
        XCTAssertEqual(KeyAlgorithm(rawValue: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV"),
                       .eciesEncryptionCofactorVariableIVX963SHA256AESGCM)
        XCTAssertEqual(KeyAlgorithm(rawValue: "algid:keyexchange:ECDH"), .ecdhKeyExchangeStandard)
        XCTAssertNil(KeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA256"))
        let key = try P256.PrivateKey()
        assertCode(try key.sign([1], algorithm: .ecdhKeyExchangeStandard), .unsupportedAlgorithm)
        assertCode(try key.publicKey.encrypt([1], algorithm: .ecdsaSignatureMessageX962SHA256), .unsupportedAlgorithm)
        assertCode(try key.exchangeKeys(with: key.publicKey, algorithm: .eciesEncryptionCofactorVariableIVX963SHA256AESGCM), .unsupportedAlgorithm)
    }
}
