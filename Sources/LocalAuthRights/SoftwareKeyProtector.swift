import Glibc
import LocalAuthCrypto
import LocalAuthSystem

/// Key protection in software: a 32-byte machine key in a root-only file,
/// and AES-256-GCM.
///
/// The machine key lives at `<state>/keys/machine-key`, apart from the rights
/// in `<state>/rights`, so a copy or backup of the rights alone opens nowhere.
/// It is made on first use (random, written and synced under a temporary
/// name, then linked into place, so two starts at once agree on one key) and
/// every later open refuses a file that is a symlink or not regular
/// (`.machineKeyNotAFile`), not owned by this process's uid
/// (`.machineKeyWrongOwner`), readable or writable by group or others
/// (`.machineKeyInsecurePermissions`), or not exactly 32 bytes
/// (`.machineKeyWrongSize`). A refused key is never replaced: that would
/// lose every right.
///
/// The machine key is not used directly: the wrapping key is
/// HKDF-SHA256(machine key, info "org.example.LocalAuth rights wrapping key 1"),
/// so a later use of the machine key for something else gets its own key.
///
/// A blob is 01 ‖ nonce (12) ‖ ciphertext ‖ tag (16), with the context
/// (purpose and owner) as associated data: a blob moved to another right, or
/// opened with another machine key, fails with `.unwrapFailed`.
///
/// What it does not protect against: root on the running machine, who can
/// read the machine key (see docs/RIGHTS-CRYPTO.md); the TPM backend is for that.
public struct SoftwareKeyProtector: KeyProtector {
    public static let machineKeyByteCount = 32
    static let blobVersion: UInt8 = 1
    static let blobOverhead = 1 + AESGCM.nonceByteCount + AESGCM.tagByteCount

    public static let name = "software"
    public var backendName: String { Self.name }
    private let wrappingKey: [UInt8]

    /// Where the machine key lives under a state directory.
    public static func machineKeyPath(stateDirectory: String) -> String { stateDirectory + "/keys/machine-key" }

    /// Loads the machine key of `stateDirectory` (which must exist), making it on first use.
    public init(stateDirectory: String) throws(RightsError) {
        let path = Self.machineKeyPath(stateDirectory: stateDirectory)
        // Once the machine key is sealed to a TPM, a plaintext one made here
        // would silently orphan every right: refuse instead.
        if case .missing = try Files.read(TPMKeyProtector.sealedMachineKeyPath(stateDirectory: stateDirectory), limit: RightLimits.wrappedKeyBytes) {
        } else {
            throw RightsError(.machineKeySealed, "the machine key of \(stateDirectory) is sealed to a TPM; use the TPM backend")
        }
        try Files.makeDirectories(Files.directory(of: path), below: stateDirectory)
        try self.init(machineKey: Self.loadOrCreate(path))
    }

    /// A protector over a given machine key (tests, and a later TPM-unsealed key).
    public init(machineKey: [UInt8]) throws(RightsError) {
        guard machineKey.count == Self.machineKeyByteCount else {
            throw RightsError(.machineKeyWrongSize, "a machine key is \(Self.machineKeyByteCount) bytes, not \(machineKey.count)")
        }
        do {
            wrappingKey = try KDF.hkdfSHA256(inputKeyMaterial: machineKey, salt: [],
                                             info: Array("org.example.LocalAuth rights wrapping key 1".utf8), outputByteCount: 32)
        } catch {
            throw RightsError.crypto(error, "deriving the wrapping key")
        }
    }

    public func wrap(_ key: [UInt8], context: KeyContext) throws(RightsError) -> [UInt8] {
        do {
            let box = try AESGCM.seal(key, key: wrappingKey, associatedData: context.associatedData)
            return [Self.blobVersion] + box.combined
        } catch {
            throw RightsError.crypto(error, "wrapping a key")
        }
    }

    public func unwrap(_ blob: [UInt8], context: KeyContext) throws(RightsError) -> [UInt8] {
        guard blob.count >= Self.blobOverhead else { throw RightsError(.unwrapFailed, "a wrapped key of \(blob.count) bytes is too short") }
        guard blob[0] == Self.blobVersion else { throw RightsError(.wrongBackend, "not a software-wrapped key (version \(blob[0]))") }
        do {
            return try AESGCM.open(AESGCM.SealedBox(combined: Array(blob.dropFirst())), key: wrappingKey,
                                   associatedData: context.associatedData)
        } catch {
            throw RightsError.crypto(error, "unwrapping the key of \(context.owner) (another machine key, or a blob moved from another right)",
                                     authentication: .unwrapFailed)
        }
    }

    // MARK: The machine key file

    static func loadOrCreate(_ path: String) throws(RightsError) -> [UInt8] {
        // Twice at most: if another process creates the file between our
        // open and our create, the second round reads its key.
        for _ in 0..<2 {
            if let key = try load(path) { return key }
            let fresh: [UInt8]
            do { fresh = try SecureRandom.bytes(machineKeyByteCount) } catch { throw RightsError.crypto(error, "making a machine key") }
            if try Files.createExclusively(fresh, at: path) { return fresh }
        }
        throw RightsError(.io, "\(path) appears and vanishes")
    }

    /// The key, nil if there is no file; every check on the open descriptor.
    static func load(_ path: String) throws(RightsError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            switch errno {
            case ENOENT: return nil
            case ELOOP: throw RightsError(.machineKeyNotAFile, "\(path) is a symbolic link")
            default: throw Files.failure("open", path)
            }
        }
        defer { close(fd) }
        guard let info = FileStatus(descriptor: fd) else { throw Files.failure("stat", path) }
        guard info.isRegularFile else { throw RightsError(.machineKeyNotAFile, "\(path) is not a regular file") }
        guard info.owner == geteuid() else { throw RightsError(.machineKeyWrongOwner, "\(path) belongs to uid \(info.owner), not \(geteuid())") }
        guard !info.grants(0o077) else {
            throw RightsError(.machineKeyInsecurePermissions, "\(path) has mode \(info.modeText); it must be 0600")
        }
        guard info.size == machineKeyByteCount else {
            throw RightsError(.machineKeyWrongSize, "\(path) is \(info.size) bytes, not \(machineKeyByteCount)")
        }
        var key = [UInt8](repeating: 0, count: machineKeyByteCount)
        var got = 0
        while got < machineKeyByteCount {
            let count = key.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, machineKeyByteCount - got) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Files.failure("read", path)
            }
            guard count > 0 else { throw RightsError(.machineKeyWrongSize, "\(path) ended after \(got) bytes") }
            got += count
        }
        return key
    }
}
