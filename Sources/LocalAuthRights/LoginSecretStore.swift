import Glibc
import LocalAuthCrypto

/// Login secrets at rest: `<state>/login/<uid>`, root 0600 in a 0700
/// directory, one file per user, written crash-safe (temporary file, fsync,
/// rename). A file larger than `maximumFileBytes` is not read.
public struct LoginSecretStore: Sendable {
    public static let maximumFileBytes = 16 * 1024
    public let directory: String
    let stateDirectory: String

    public init(stateDirectory: String) {
        self.stateDirectory = stateDirectory
        directory = stateDirectory + "/login"
    }

    public func path(of uid: UInt32) -> String { directory + "/\(uid)" }

    /// The user's record, nil if they have none; a damaged or misplaced file throws.
    public func load(_ uid: UInt32) throws(RightsError) -> LoginSecretRecord? {
        switch try Files.read(path(of: uid), limit: Self.maximumFileBytes) {
        case .missing: return nil
        case .tooLarge(let size): throw RightsError(.oversize, "\(path(of: uid)) is \(size) bytes")
        case .bytes(let bytes):
            let record = try LoginSecretCoding.decode(bytes)
            guard record.uid == uid else { throw RightsError(.misplaced, "\(path(of: uid)) holds the login secret of uid \(record.uid)") }
            return record
        }
    }

    public func save(_ record: LoginSecretRecord) throws(RightsError) {
        try Files.makeDirectories(directory, below: stateDirectory)
        try Files.write(LoginSecretCoding.encode(record), to: path(of: record.uid))
    }

    /// Saves a new record only if the user has none (link, which never
    /// replaces): false, and nothing written or removed, if one is there.
    public func create(_ record: LoginSecretRecord) throws(RightsError) -> Bool {
        try Files.makeDirectories(directory, below: stateDirectory)
        return try Files.createExclusively(LoginSecretCoding.encode(record), at: path(of: record.uid))
    }

    /// Removes the user's record; false if there was none.
    @discardableResult
    public func remove(_ uid: UInt32) throws(RightsError) -> Bool {
        try Files.remove(path(of: uid))
    }
}

/// The file: magic `LALOGIN\n`, version 1 (2 bytes), then tagged fields
/// `tag (1) ‖ length (4) ‖ value` in order, all big-endian: uid, backend,
/// machine wrap, commitment, password key, password wrap, and the pending
/// password key if any. A password key is salt length (1) ‖ salt ‖ time (4)
/// ‖ memory KiB (4) ‖ lanes (4) ‖ D (65). Last, when a password change
/// missed its re-wrap, the one byte 1.
enum LoginSecretCoding {
    static let magic = Array("LALOGIN\n".utf8)
    static let version: UInt16 = 1

    enum Tag: UInt8, CaseIterable {
        case uid = 1
        case backend
        case machineWrap
        case commitment
        case password
        case passwordWrap
        case pending
        case missedPasswordChange
    }

    static func encode(_ record: LoginSecretRecord) -> [UInt8] {
        var out = magic + [UInt8(version >> 8), UInt8(version & 0xFF)]
        func field(_ tag: Tag, _ value: [UInt8]) { out += [tag.rawValue] + bigEndian(UInt32(value.count)) + value }
        field(.uid, bigEndian(record.uid))
        field(.backend, Array(record.backend.utf8))
        field(.machineWrap, record.machineWrap)
        field(.commitment, record.commitment)
        field(.password, encode(record.password))
        field(.passwordWrap, record.passwordWrap)
        if let pending = record.pending { field(.pending, encode(pending)) }
        if record.missedPasswordChange { field(.missedPasswordChange, [1]) }
        return out
    }

    static func encode(_ key: LoginPasswordKeyInfo) -> [UInt8] {
        [UInt8(key.salt.count)] + key.salt + bigEndian(key.parameters.time) + bigEndian(key.parameters.memoryKiB)
            + bigEndian(key.parameters.lanes) + key.publicKey.x963Representation
    }

    static func decode(_ bytes: [UInt8]) throws(RightsError) -> LoginSecretRecord {
        guard bytes.count >= magic.count + 2, Array(bytes.prefix(magic.count)) == magic else { throw RightsError(.badMagic, "not a login secret file") }
        let version = UInt16(bytes[magic.count]) << 8 | UInt16(bytes[magic.count + 1])
        guard version == Self.version else { throw RightsError(.unsupportedVersion, "login secret file version \(version)") }
        var cursor = magic.count + 2
        var fields: [Tag: [UInt8]] = [:]
        var last: UInt8 = 0
        while cursor < bytes.count {
            guard bytes.count - cursor >= 5 else { throw RightsError(.truncated, "a login secret field header is cut short") }
            guard let tag = Tag(rawValue: bytes[cursor]), tag.rawValue > last else {
                throw RightsError(.malformed, "login secret field \(bytes[cursor]) out of order")
            }
            let length = Int(readUInt32(bytes, cursor + 1))
            cursor += 5
            guard bytes.count - cursor >= length else { throw RightsError(.truncated, "login secret field \(tag) is cut short") }
            fields[tag] = Array(bytes[cursor..<cursor + length])
            cursor += length
            last = tag.rawValue
        }
        guard let uid = fields[.uid], uid.count == 4, let backend = fields[.backend], !backend.isEmpty,
            backend.count <= RightLimits.backendNameBytes, let machineWrap = fields[.machineWrap],
            machineWrap.count <= RightLimits.wrappedKeyBytes, let commitment = fields[.commitment], commitment.count == 32,
            let password = fields[.password], let passwordWrap = fields[.passwordWrap],
            passwordWrap.count == ECIES.overheadByteCount + LoginSecretRecord.secretBytes,
            fields[.missedPasswordChange] == nil || fields[.missedPasswordChange] == [1]
        else { throw RightsError(.malformed, "a login secret file lacks a field or has one of the wrong size") }
        return LoginSecretRecord(
            uid: readUInt32(uid, 0), backend: String(decoding: backend, as: UTF8.self), machineWrap: machineWrap,
            commitment: commitment, password: try decodeKey(password), passwordWrap: passwordWrap,
            pending: try fields[.pending].map { (bytes) throws(RightsError) in try decodeKey(bytes) },
            missedPasswordChange: fields[.missedPasswordChange] != nil)
    }

    static func decodeKey(_ bytes: [UInt8]) throws(RightsError) -> LoginPasswordKeyInfo {
        guard let saltCount = bytes.first.map(Int.init), bytes.count == 1 + saltCount + 12 + P256.x963ByteCount else {
            throw RightsError(.malformed, "a login password key of \(bytes.count) bytes")
        }
        let at = 1 + saltCount
        let parameters = LoginPasswordKeyInfo.Parameters(
            time: readUInt32(bytes, at), memoryKiB: readUInt32(bytes, at + 4),
            lanes: readUInt32(bytes, at + 8))
        let publicKey: P256.PublicKey
        do { publicKey = try P256.PublicKey(x963Representation: Array(bytes.suffix(P256.x963ByteCount))) } catch {
            throw RightsError.crypto(error, "a login password key")
        }
        return try LoginPasswordKeyInfo(salt: Array(bytes[1..<at]), parameters: parameters, publicKey: publicKey)
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }

    static func readUInt32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }
}
