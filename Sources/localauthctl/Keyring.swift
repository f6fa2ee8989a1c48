// localauthctl keyring: the login keyring opened by the login secret
// (docs/KEYRING.md). The password is asked here, once, and goes only into
// Argon2id (LocalAuthKeyring) and to gnome-keyring's own interface on the
// session bus; localauthd gets the public key D the password gives.
import Foundation
import Glibc
import LocalAuthCrypto
import LocalAuthentication
import LocalAuthKeyring

let keyringHelp = """
          keyring status              whether your login keyring opens with your fingerprint
          keyring enable              your login keyring opens with your fingerprint too (asks
                                      your login password once); its password becomes the
                                      login secret, kept by localauthd
          keyring disable             your login keyring gets your login password back (asks it)
    """

/// The login password: from the terminal without echo, or a line of stdin when it is not a terminal.
func readLoginPassword() -> [UInt8]? {
    let input = STDIN_FILENO
    var saved = termios()
    let isTerminal = isatty(input) == 1 && tcgetattr(input, &saved) == 0
    if isTerminal {
        FileHandle.standardError.write(Data("Login password: ".utf8))
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(input, TCSAFLUSH, &quiet)
    }
    defer {
        if isTerminal {
            tcsetattr(input, TCSAFLUSH, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        }
    }
    var bytes: [UInt8] = []
    var byte: UInt8 = 0
    while read(input, &byte, 1) == 1, byte != 0x0A { bytes.append(byte) }
    return bytes.isEmpty ? nil : bytes
}

func hexBytes(_ bytes: [UInt8]) -> [UInt8] {
    Array(bytes.map { String(format: "%02x", $0) }.joined().utf8)
}

func clear(_ bytes: inout [UInt8]) { for index in bytes.indices { bytes[index] = 0 } }

/// What opens the login keyring: the login password, or the login secret.
enum KeyringPassword { case loginPassword, loginSecret }

/// Changes the login keyring's password between the login password and the
/// login secret, which `wrap` holds as the service answered it (ECIES to the
/// password's key) and gnome-keyring is given in hex; both copies of the
/// secret are cleared from memory after, whatever happened. A wrap that does
/// not open fails as gnome-keyring's refusal does: the keyring is unchanged.
func changeKeyringPassword(to new: KeyringPassword, password: [UInt8], wrap: [UInt8], key: P256.PrivateKey) throws {
    var secret = try ECIES.decrypt(wrap, with: key)
    var master = hexBytes(secret)
    defer {
        clear(&secret)
        clear(&master)
    }
    switch new {
    case .loginSecret: try GnomeKeyring.changeLoginPassword(from: password, to: master)
    case .loginPassword: try GnomeKeyring.changeLoginPassword(from: master, to: password)
    }
}

func keyring(_ arguments: ArraySlice<String>) async -> Int32 {
    var arguments = arguments
    guard let verb = arguments.popFirst(), arguments.isEmpty else { usageError("keyring needs status, enable or disable") }
    do {
        let status = try await LALoginSecret.status()
        switch verb {
        case "status":
            guard status.enabled else {
                say("login keyring: opened by your login password only (localauthctl keyring enable)")
                return Exit.success
            }
            say("login keyring: opened by your fingerprint or your login password")
            say("machine wrap: \(status.backend == "tpm2" ? "the TPM" : "the machine key (root can read it; no TPM)")")
            if status.passwordWrapStale {
                say(
                    "the password copy still uses a previous password (reset by an administrator, or a password change that could "
                        + "not update it): log in once with your password, then once with your fingerprint")
            }
            return Exit.success
        case "enable":
            guard !status.enabled else {
                complain("the login keyring already opens with your fingerprint")
                return Exit.other
            }
            guard var password = readLoginPassword() else { usageError("no password given") }
            defer { clear(&password) }
            let parameters = LoginPasswordDerivation.Parameters.standard
            let salt = try SecureRandom.bytes(16)
            let key = try LoginPasswordDerivation.privateKey(password: password, salt: salt, parameters: parameters)
            let wrap = try await LALoginSecret.enable(
                passwordKey: key.publicKey.x963Representation, salt: salt, time: parameters.time,
                memoryKiB: parameters.memoryKiB, lanes: parameters.lanes)
            do {
                try changeKeyringPassword(to: .loginSecret, password: password, wrap: wrap, key: key)
            } catch {
                // The keyring kept its password: take the login secret back out.
                _ = try? await LALoginSecret.disable(proof: key.signature(for: LALoginSecret.disableProofMessage()), commit: true)
                complain("the login keyring kept its password: \(error)")
                return Exit.failed
            }
            say("login keyring: opens with your fingerprint or your login password from your next login")
            return Exit.success
        case "disable":
            guard status.enabled else {
                complain("the login keyring opens with your login password already")
                return Exit.other
            }
            guard var password = readLoginPassword() else { usageError("no password given") }
            defer { clear(&password) }
            let parameters = LoginPasswordDerivation.Parameters(time: status.time, memoryKiB: status.memoryKiB, lanes: status.lanes)
            let key = try LoginPasswordDerivation.privateKey(password: password, salt: status.salt, parameters: parameters)
            let proof = try key.signature(for: LALoginSecret.disableProofMessage())
            let wrap = try await LALoginSecret.disable(proof: proof, commit: false)
            do {
                try changeKeyringPassword(to: .loginPassword, password: password, wrap: wrap, key: key)
            } catch {
                complain("the login keyring kept the login secret as its password (nothing removed): \(error)")
                return Exit.failed
            }
            _ = try await LALoginSecret.disable(proof: proof, commit: true)
            say("login keyring: opened by your login password only")
            return Exit.success
        default:
            usageError("unknown keyring command \(verb)")
        }
    } catch let error as LAFingerprints.ServiceError where error.shortName == "NotAuthorized" {
        complain("that is not your login password")
        return Exit.failed
    } catch {
        return report(error)
    }
}
