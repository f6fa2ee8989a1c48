import Foundation
import LocalAuthCrypto
import RigSupport
@testable import LocalAuthTPM
import XCTest

/// The TPM layer against a real software TPM: sealing, P-256 keys whose
/// signatures and ECDH agree with OpenSSL, flushed objects, foreign TPMs.
final class TPMDeviceTests: XCTestCase {
    func testSealedDataRoundTripsAndIsATPMBlob() throws {
        let tpm = try SoftwareTPM()
        let secret = try SecureRandom.bytes(32)
        let blob = try tpm.device.seal(secret)
        XCTAssertEqual(try tpm.device.unseal(blob), secret)
        // TPM2B_PUBLIC ‖ TPM2B_PRIVATE, the secret nowhere in it.
        XCTAssertEqual(try TPMObjectBlob(bytes: blob.bytes), blob)
        XCTAssertFalse(Data(blob.bytes).range(of: Data(secret)) != nil)
        XCTAssertTPMError(try TPMObjectBlob(bytes: Array(blob.bytes.dropLast())), .malformedBlob)
        XCTAssertTPMError(try TPMObjectBlob(bytes: blob.bytes + [0]), .malformedBlob)
    }

    func testATPMSignatureVerifiesWithOpenSSL() throws {
        let tpm = try SoftwareTPM()
        let auth = try SecureRandom.bytes(32)
        let (blob, publicKey) = try tpm.device.createP256Key(authValue: auth)
        XCTAssertEqual(try blob.p256PublicKey(), publicKey)
        let message = Array("signed in the TPM".utf8)
        let signature = try tpm.device.signature(for: message, key: blob, authValue: auth)
        XCTAssertTrue(publicKey.isValidSignature(signature, for: message))
        XCTAssertFalse(publicKey.isValidSignature(signature, for: message + [0]))
        let digest = try SHA256.hash(message)
        XCTAssertTrue(publicKey.isValidSignature(try tpm.device.signature(forDigest: digest, key: blob, authValue: auth), forDigest: digest))

        // The openssl tool agrees, from the PEM public key and the DER signature.
        let directory = tpm.stateDirectory
        let pem = "-----BEGIN PUBLIC KEY-----\n" + Data(try publicKey.derRepresentation).base64EncodedString(options: .lineLength64Characters)
            + "\n-----END PUBLIC KEY-----\n"
        try pem.write(toFile: directory + "/key.pem", atomically: true, encoding: .utf8)
        try Data(message).write(to: URL(fileURLWithPath: directory + "/message"))
        try Data(signature).write(to: URL(fileURLWithPath: directory + "/signature.der"))
        let verified = try runProgram("/usr/bin/openssl", ["dgst", "-sha256", "-verify", directory + "/key.pem",
                                                   "-signature", directory + "/signature.der", directory + "/message"])
        XCTAssertEqual(verified.status, 0, verified.output)
        XCTAssertTrue(verified.output.contains("Verified OK"), verified.output)

        // Without its auth value the key does nothing.
        XCTAssertTPMError(try tpm.device.signature(for: message, key: blob, authValue: Array(repeating: 1, count: 32)), .authorizationFailed)
    }

    func testECDHInTheTPMMatchesOpenSSL() throws {
        let tpm = try SoftwareTPM()
        let (blob, publicKey) = try tpm.device.createP256Key(authValue: [7])
        let peer = try P256.PrivateKey()
        let inTPM = try tpm.device.sharedSecret(with: peer.publicKey, key: blob, authValue: [7])
        XCTAssertEqual(inTPM, try peer.sharedSecretFromKeyAgreement(with: publicKey))

        // ECIES: a ciphertext made by the software path to the TPM key opens
        // with Z from the TPM and the shared KDF/AES-GCM code.
        let message = Array("for the TPM key".utf8)
        let ciphertext = try ECIES.encrypt(message, to: publicKey)
        let z = try tpm.device.sharedSecret(with: ECIES.ephemeralPublicKey(of: ciphertext), key: blob, authValue: [7])
        XCTAssertEqual(try ECIES.decrypt(ciphertext, sharedSecret: z), message)
    }

    /// A TPM has three object slots or so; without FlushContext the fourth load
    /// fails ("out of memory for object contexts").
    func testTwentyKeysInARow() throws {
        let tpm = try SoftwareTPM()
        let device = tpm.device
        for index in 0..<20 {
            let (blob, publicKey) = try device.createP256Key(authValue: [UInt8(index)])
            let message = [UInt8(index)]
            XCTAssertTrue(publicKey.isValidSignature(try device.signature(for: message, key: blob, authValue: [UInt8(index)]), for: message))
            XCTAssertEqual(try device.unseal(device.seal([UInt8(index)])), [UInt8(index)])
        }
    }

    func testAnotherTPMCannotLoadTheBlobs() throws {
        let first = try SoftwareTPM()
        let sealed = try first.device.seal([1, 2, 3])
        let (key, _) = try first.device.createP256Key(authValue: [9])
        let second = try SoftwareTPM()
        XCTAssertTPMError(try second.device.unseal(sealed), .foreignObject)
        XCTAssertTPMError(try second.device.signature(for: [1], key: key, authValue: [9]), .foreignObject)
        // The first still can.
        XCTAssertEqual(try first.device.unseal(sealed), [1, 2, 3])
    }

    func testNoTPMIsUnavailable() throws {
        let tpm = try SoftwareTPM()
        let blob = try tpm.device.seal([5])
        let device = tpm.device
        tpm.kill()
        XCTAssertTPMError(try device.unseal(blob), .unavailable)
        XCTAssertTPMError(try TPMDevice(tcti: "device:/nonexistent/tpmrm0").probe(), .unavailable)
        do {
            try device.probe()
        } catch {
            XCTAssertTrue(error.text.count > 3, "Tss2_RC_Decode text: \(error)")
        }
    }
}
