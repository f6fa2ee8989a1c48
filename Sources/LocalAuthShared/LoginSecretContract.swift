/// The login secret part of the contract (dbus/org.example.LocalAuth.xml,
/// "Login secret"; docs/KEYRING.md): a random key K per user that opens the
/// login keyring, released to the PAM host after a fingerprint match the
/// service saw, or opened there with the login password.
public enum LocalAuthLoginSecretBus {
    public enum Method {
        /// The caller's own uid (polkit keyring).
        public static let enable = "EnableLoginSecret"
        public static let disable = "DisableLoginSecret"
        public static let status = "GetLoginSecretStatus"
        /// uid 0 only (polkit login-secret).
        public static let release = "ReleaseLoginSecret"
        public static let getPasswordWrap = "GetLoginSecretPasswordWrap"
        public static let changePassword = "ChangeLoginSecretPassword"
        public static let reseal = "ResealLoginSecret"
    }

    /// Keys of the methods' `a{sv}` options and answers.
    public enum Key {
        /// (ay, 65) D: the public key the login password gives.
        public static let passwordKey = "password-key"
        /// (ay, 16–64) the Argon2id salt of that key.
        public static let salt = "salt"
        /// (u) Argon2id passes, memory in KiB, lanes.
        public static let argon2Time = "argon2-time"
        public static let argon2MemoryKiB = "argon2-memory-kib"
        public static let argon2Lanes = "argon2-lanes"
        /// (ay) an ECDSA-SHA256 signature by the current password's key (`ProofLabel`).
        public static let proof = "proof"
        /// (b) DisableLoginSecret: remove the login secret (after the keyring got its password back).
        public static let commit = "commit"
        /// (b, true) ChangeLoginSecretPassword without a key: the PAM host's
        /// re-wrap could not run (no Argon2id slot); the wrap is stale.
        public static let staleMark = "stale"
        /// (ay) VerifyUser's option: the PAM transaction's nonce a match's ticket is bound to.
        public static let nonce = "login-secret-nonce"

        // Answers.
        /// (b)
        public static let enabled = "enabled"
        /// (ay) ECIES(D, K)
        public static let passwordWrap = "password-wrap"
        /// (ay) ECIES(the caller's ephemeral key, K)
        public static let secret = "secret"
        /// (b) the password wrap still needs the old password (a reset by root
        /// is pending, or a password change missed its re-wrap).
        public static let stale = "password-wrap-stale"
        /// (b) ReleaseLoginSecret made the password wrap for the pending password.
        public static let renewed = "password-wrap-renewed"
        /// (b) the machine wrap opens with this machine's key backend now.
        public static let machineWrapOK = "machine-wrap-ok"
        /// (ay) a service key for ResealLoginSecret, good for one call from this process.
        public static let resealKey = "reseal-key"
        /// (s) the key backend of the machine wrap ("tpm2", "software").
        public static let backend = "backend"
        /// (b) ChangeLoginSecretPassword, GetLoginSecretPasswordWrap: a new
        /// password's key waits for the owner's next finger.
        public static let pending = "pending"
    }

    /// What the password proofs sign: label ‖ 0 ‖ uid (4, big-endian) ‖ the
    /// caller's unique bus name ‖ 0 ‖ the call's payload (D′ ‖ salt′ for a change, nothing for disable).
    public enum ProofLabel {
        public static let disable = "org.example.LocalAuth login secret disable 1"
        public static let change = "org.example.LocalAuth login password change 1"

        public static func message(_ label: String, uid: UInt32, sender: String, payload: [UInt8] = []) -> [UInt8] {
            Array(label.utf8) + [0, UInt8(uid >> 24), UInt8(uid >> 16 & 0xFF), UInt8(uid >> 8 & 0xFF), UInt8(uid & 0xFF)]
                + Array(sender.utf8) + [0] + payload
        }
    }
}
