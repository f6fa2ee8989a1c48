internal import CKeyringShim
import Glibc

/// The login keyring's password, changed through gnome-keyring's own
/// interface on the user's session bus (CKeyringShim: libsecret's encrypted
/// session, ChangeWithMasterPassword). gnome-keyring checks `original`
/// itself: it must open the login keyring.
public enum GnomeKeyring {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static func changeLoginPassword(from original: [UInt8], to master: [UInt8]) throws {
        var message: UnsafeMutablePointer<CChar>?
        let result = original.withUnsafeBytes { old in
            master.withUnsafeBytes { new in
                la_keyring_change_login_password(
                    old.baseAddress?.assumingMemoryBound(to: CChar.self), old.count,
                    new.baseAddress?.assumingMemoryBound(to: CChar.self), new.count, &message)
            }
        }
        guard result == 0 else {
            let text = message.map { String(cString: $0) } ?? "unknown failure"
            free(message)
            throw Failure(description: text)
        }
    }
}
