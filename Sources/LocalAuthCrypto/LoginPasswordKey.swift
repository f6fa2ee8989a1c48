extension P256.PrivateKey {
    /// A key from its raw 32-byte scalar (big-endian), which must lie in
    /// [1, n−1]; anything else is `.invalidKey`. The scalar goes to libcrypto
    /// as a PKCS#8 PrivateKeyInfo over a SEC1 ECPrivateKey without the public
    /// point, which libcrypto computes; the whole-key check runs as for any key.
    public init(scalar: [UInt8]) throws(CryptoError) {
        guard scalar.count == 32 else { throw CryptoError(.invalidKey, "a P-256 scalar is 32 bytes, not \(scalar.count)") }
        guard scalar.contains(where: { $0 != 0 }) else { throw CryptoError(.invalidKey, "the P-256 scalar is zero") }
        // SEQUENCE { INTEGER 0, SEQUENCE { id-ecPublicKey, prime256v1 }, OCTET STRING { SEQUENCE { INTEGER 1, OCTET STRING d } } }
        let prefix: [UInt8] = [
            0x30, 0x41, 0x02, 0x01, 0x00,
            0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07,
            0x04, 0x27, 0x30, 0x25, 0x02, 0x01, 0x01, 0x04, 0x20,
        ]
        var der = prefix + scalar
        defer { for index in der.indices { der[index] = 0 } }
        try self.init(derRepresentation: der)
    }
}

/// The P-256 key a login password gives (docs/KEYRING.md): d is the first of
/// HKDF-SHA256(seed, info "org.example.LocalAuth login password key 1" ‖
/// counter₈), counter = 1, 2, …, that is a valid scalar, where seed is the
/// 32-byte Argon2id output of the password and the wrap's salt. The PAM
/// module (C, libcrypto) derives the same key; the service only ever holds
/// its public half D, and the password wrap is ECIES(D, K).
public enum LoginPasswordKey {
    public static let seedByteCount = 32

    /// Argon2id v1.3's cost for the seed: passes, memory in KiB, lanes. One
    /// type for the client that derives the key (LocalAuthKeyring) and the
    /// service that keeps what a key was made with (LocalAuthRights).
    public struct Parameters: Sendable, Hashable {
        public let time: UInt32
        public let memoryKiB: UInt32
        public let lanes: UInt32

        public init(time: UInt32, memoryKiB: UInt32, lanes: UInt32) {
            self.time = time
            self.memoryKiB = memoryKiB
            self.lanes = lanes
        }

        /// RFC 9106's second recommended option with one lane (no threads in
        /// a setuid PAM host): t = 3, 64 MiB; the PAM module's default too.
        public static let standard = Parameters(time: 3, memoryKiB: 64 * 1024, lanes: 1)

        /// What a PAM host runs (pam/login_secret.h has the same bounds): 1–4
        /// passes, 8 to 64 MiB, one lane. The user chooses them (enable), and
        /// a login of theirs, `su` to them or their `passwd` runs them as
        /// root, holding one of the machine's few Argon2id slots
        /// (docs/KEYRING.md): the dearest, t = 4 at 64 MiB, takes about 0.3 s
        /// on one core of this project's machine, so no one can make a
        /// derivation hold a slot for long. One lane: libargon2 runs a thread
        /// per lane, and a setuid PAM host should start none.
        public var isAffordable: Bool {
            Self.timeBounds.contains(time) && Self.memoryKiBBounds.contains(memoryKiB) && Self.laneBounds.contains(lanes)
        }
        public static let timeBounds: ClosedRange<UInt32> = 1...4
        public static let memoryKiBBounds: ClosedRange<UInt32> = 8 * 1024...64 * 1024
        public static let laneBounds: ClosedRange<UInt32> = 1...1
    }
    static let info = Array("org.example.LocalAuth login password key 1".utf8)

    public static func privateKey(seed: [UInt8]) throws(CryptoError) -> P256.PrivateKey {
        guard seed.count == seedByteCount else { throw CryptoError(.invalidInput, "a password key seed is \(seedByteCount) bytes, not \(seed.count)") }
        // A 32-byte value is ≥ n with probability about 2⁻³²: 8 counters never run out.
        for counter in UInt8(1)...8 {
            var scalar = try KDF.hkdfSHA256(inputKeyMaterial: seed, salt: [], info: info + [counter], outputByteCount: 32)
            defer { for index in scalar.indices { scalar[index] = 0 } }
            if let key = try? P256.PrivateKey(scalar: scalar) { return key }
        }
        throw CryptoError(.invalidKey, "no P-256 scalar from this seed")
    }
}
