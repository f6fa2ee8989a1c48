@testable import LocalAuthCrypto
import LocalAuthKeyring
import XCTest

/// The login password's key and the login secret's ECIES agree with the PAM
/// module's C code (pam/login_secret_crypto.c, libcrypto): these vectors were
/// made by that code (seed 32 × 0x07), so a change on either side that
/// breaks the other fails here.
final class LoginPasswordKeyTests: XCTestCase {
    static let publicKeyFromC =
        "0483d7d2517b1fb780f0c92f34adf3f6b57e17f37f3547cef7ec68392125b3fe82f93eb8cfe9c560826e74ef895132a7ec2a8ca6c0d60ac8aa96ed19a5138952b6"
    /// ECIES to that key of 32 × 0x33, by the C code.
    static let ciphertextFromC =
        "049e4798456661b3a4cc2cdc81f1a63d1500cd0d5ed9e88af2225bda538de04e2e4bd917986d6f47abb59d8a8942196455d7454a14481d44c401694d40cd65028b"
        + "e0a63978248ac0767895a0f98fce4f20600cc19934f6455838e7b8c69c523f53ed34e511c4a04a164fd5c95d38632ce9"
    /// ECDSA-SHA256 over "hello" by that key, by the C code.
    static let signatureFromC =
        "3045022000b780aeac5fba602496d963961271993a7a0c35a664ba6709242be0a46a818d0221009455ecf002f35c7c231f5a9609221cf372159837f7177b65ace288482e8edade"

    func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    func testTheSeedGivesTheKeyTheCModuleDerives() throws {
        let key = try LoginPasswordKey.privateKey(seed: [UInt8](repeating: 7, count: 32))
        XCTAssertEqual(key.publicKey.x963Representation, bytes(Self.publicKeyFromC))
        XCTAssertEqual(try ECIES.decrypt(bytes(Self.ciphertextFromC), with: key), [UInt8](repeating: 0x33, count: 32))
        XCTAssertTrue(key.publicKey.isValidSignature(bytes(Self.signatureFromC), for: Array("hello".utf8)))
        XCTAssertThrowsError(try LoginPasswordKey.privateKey(seed: [1, 2, 3]))
    }

    func testAnotherSeedAnotherKey() throws {
        let one = try LoginPasswordKey.privateKey(seed: [UInt8](repeating: 7, count: 32))
        let two = try LoginPasswordKey.privateKey(seed: [UInt8](repeating: 8, count: 32))
        XCTAssertNotEqual(one.publicKey, two.publicKey)
        XCTAssertEqual(try LoginPasswordKey.privateKey(seed: [UInt8](repeating: 7, count: 32)).publicKey, one.publicKey, "deterministic")
    }

    /// Argon2id (t = 1, 8 MiB, 1 lane, salt 16 × 0x01) of "pw", then the
    /// seed's key: the public key the C module derived.
    func testTheArgon2idKeyIsTheCModules() throws {
        let key = try LoginPasswordDerivation.privateKey(
            password: Array("pw".utf8), salt: [UInt8](repeating: 1, count: 16),
            parameters: .init(time: 1, memoryKiB: 8192, lanes: 1))
        XCTAssertEqual(
            key.publicKey.x963Representation,
            bytes("04716cf49058b5b088cce79a72c6e7dddc2de3a939257da9334131fb13d5de85405705152eea6b633328143a87539ec6a355405bffead252be1bf34c3bd277df41"))
    }
}
