import LocalAuthCrypto
import LocalAuthTPM

/// The machine key sealed to the TPM, at `<state>/keys/machine-key.tpm`
/// (TPM2B_PUBLIC ‖ TPM2B_PRIVATE of a sealed data object, root 0600).
extension TPMKeyProtector {
    /// Where the former software machine key is kept, sealed, after the
    /// move: it opens only the software rights made before the move.
    public static func sealedSoftwareKeyPath(stateDirectory: String) -> String { stateDirectory + "/keys/software-machine-key.tpm" }

    /// Moves from the software machine key (`keys/machine-key`) to the TPM,
    /// **rotating** the machine key: the software key is sealed to the TPM
    /// as `keys/software-machine-key.tpm` (checked to unseal to the same
    /// bytes), and only opens the software rights made before the move; a
    /// new random machine key, sealed as `keys/machine-key.tpm`, wraps every
    /// right saved from then on. Only then is the plaintext file removed. So
    /// a backup taken before the move (the plaintext key included) opens no
    /// right saved after it. No right file is rewritten. Interrupted at any
    /// point, the next call finishes it. Returns whether there was a
    /// plaintext key to move.
    @discardableResult
    public static func moveMachineKeyToTPM(stateDirectory: String, device: TPMDevice) throws(RightsError) -> Bool {
        let plainPath = SoftwareKeyProtector.machineKeyPath(stateDirectory: stateDirectory)
        let sealedPath = sealedMachineKeyPath(stateDirectory: stateDirectory)
        let softwarePath = sealedSoftwareKeyPath(stateDirectory: stateDirectory)
        guard let key = try SoftwareKeyProtector.load(plainPath) else { return false }
        if try unsealExisting(softwarePath, device: device) == nil {
            let blob = try tpm("sealing the software machine key") { () throws(TPMError) in try device.seal(key) }
            let back = try tpm("unsealing the software machine key") { () throws(TPMError) in try device.unseal(blob) }
            guard back == key else { throw RightsError(.tpm, "the TPM unsealed another machine key than it sealed") }
            _ = try Files.createExclusively(blob.bytes, at: softwarePath)
        }
        guard let sealed = try unsealExisting(softwarePath, device: device), sealed == key else {
            throw RightsError(.machineKeySealed, "\(softwarePath) and \(plainPath) hold different machine keys; neither is removed")
        }
        // The new machine key. An earlier build sealed the software key itself
        // as machine-key.tpm; a move it left unfinished is rotated here too.
        let current = try unsealExisting(sealedPath, device: device)
        if current == nil || current == key {
            let fresh: [UInt8]
            do { fresh = try SecureRandom.bytes(SoftwareKeyProtector.machineKeyByteCount) } catch { throw RightsError.crypto(error, "making a machine key") }
            let blob = try tpm("sealing the new machine key") { () throws(TPMError) in try device.seal(fresh) }
            if current == nil {
                _ = try Files.createExclusively(blob.bytes, at: sealedPath)
            } else {
                try Files.write(blob.bytes, to: sealedPath)
            }
        }
        guard let rotated = try unsealExisting(sealedPath, device: device), rotated != key else {
            throw RightsError(.machineKeySealed, "\(sealedPath) could not be rotated; \(plainPath) is kept")
        }
        _ = try Files.remove(plainPath)
        try Files.syncDirectory(Files.directory(of: plainPath))
        return true
    }

    /// The unsealed machine key: moved from software first if there is a
    /// plaintext one, else made and sealed on first use.
    static func loadOrCreateMachineKey(stateDirectory: String, device: TPMDevice) throws(RightsError) -> [UInt8] {
        let sealedPath = sealedMachineKeyPath(stateDirectory: stateDirectory)
        try Files.makeDirectories(Files.directory(of: sealedPath), below: stateDirectory)
        try moveMachineKeyToTPM(stateDirectory: stateDirectory, device: device)
        // Twice at most: another process may create the file between our read and our create.
        for _ in 0..<2 {
            if let key = try unsealExisting(sealedPath, device: device) { return key }
            let fresh: [UInt8]
            do { fresh = try SecureRandom.bytes(SoftwareKeyProtector.machineKeyByteCount) } catch { throw RightsError.crypto(error, "making a machine key") }
            let blob = try tpm("sealing a new machine key") { () throws(TPMError) in try device.seal(fresh) }
            if try Files.createExclusively(blob.bytes, at: sealedPath) { return fresh }
        }
        throw RightsError(.io, "\(sealedPath) appears and vanishes")
    }

    /// The key sealed in `path`, nil if there is no such file.
    static func unsealExisting(_ path: String, device: TPMDevice) throws(RightsError) -> [UInt8]? {
        let bytes: [UInt8]
        switch try Files.read(path, limit: RightLimits.wrappedKeyBytes) {
        case .missing: return nil
        case .tooLarge(let size): throw RightsError(.oversize, "\(path) is \(size) bytes")
        case .bytes(let read): bytes = read
        }
        let key = try tpm("the sealed machine key \(path)") { () throws(TPMError) in
            try device.unseal(TPMObjectBlob(bytes: bytes))
        }
        guard key.count == SoftwareKeyProtector.machineKeyByteCount else {
            throw RightsError(.machineKeyWrongSize, "\(path) unseals to \(key.count) bytes")
        }
        return key
    }
}
