import LocalAuthCrypto

/// One persisted right on disk: who owns it, what unlocks it, its public key
/// in the clear, and its secret and private key sealed.
///
/// The file (all integers big-endian):
///
///     offset  size  what
///     0       8     magic "LARIGHT\n"
///     8       2     format version, 1
///     10      4     header size H (from offset 0, these 14 bytes included)
///     14      …     header fields, each tag (1) ‖ length (4) ‖ value, in this order:
///                     01 identifier (UTF-8)     02 app id (UTF-8)      03 uid (4)
///                     04 requirement (1, or 33 with the enrolled-set digest)
///                     05 created (8, Unix seconds) 06 key backend name (UTF-8)
///                     07 wrapped per-right key   08 public key (65, x963)
///     H       …     sealed fields, same shape:
///                     10 secret:      nonce ‖ AES-256-GCM(present flag ‖ secret) ‖ tag
///                     11 private key: nonce ‖ AES-256-GCM(the backend's key: PKCS#8 DER,
///                                     or a TPM key's TPM2B_PUBLIC ‖ TPM2B_PRIVATE) ‖ tag
///     end of file right after field 11.
///
/// Keys: a random 32-byte per-right key K seals both parts; K itself is
/// wrapped by the `KeyProtector` for (owner, `.rightKey`). The associated data
/// of each sealed part is the header's exact bytes followed by its tag, so
/// any change to the header (owner, requirement, time, public key, wrapped
/// key) or swapping the two parts makes them fail to open.
///
/// Decoding is strict: every field is required, in order, within its limit,
/// and nothing may follow; damage is named (`.badMagic`,
/// `.unsupportedVersion`, `.truncated`, `.oversize`, `.malformed`), and
/// `verify` / `secret` / `privateKey` name tampering (`.authenticationFailed`,
/// `.unwrapFailed`).
public struct RightRecord: Sendable {
    public static let magic = Array("LARIGHT\n".utf8)
    public static let version: UInt16 = 1

    public let owner: RightOwner
    public let requirement: RightRequirement
    /// Unix seconds.
    public let created: Int64
    /// The `KeyProtector` that wrapped the per-right key.
    public let backendName: String
    /// The public key's point, 04 ‖ X ‖ Y (65 bytes): what ListRights and
    /// GetPublicKey give, and what tells two rights of one owner apart.
    /// Decoding checks only that it is a point of P-256 (`P256.isPublicPoint`,
    /// a few µs); the full key is built when it is used (`publicKey`). The
    /// point came from the key pair made when the right was saved; a point
    /// changed on disk makes the right fail to open (the header is the sealed
    /// parts' associated data), and one off the curve fails to decode.
    public let publicKeyPoint: [UInt8]

    /// Usable without unlocking the right (Apple's `LAPublicKey`), built and
    /// checked in full from `publicKeyPoint` (~50 µs).
    public var publicKey: P256.PublicKey {
        get throws(RightsError) {
            do { return try P256.PublicKey(x963Representation: publicKeyPoint) } catch { throw RightsError(.malformed, "public key: \(error.message)") }
        }
    }

    let header: [UInt8]
    let wrappedKey: [UInt8]
    let sealedSecret: [UInt8]
    let sealedPrivateKey: [UInt8]

    enum Tag: UInt8 {
        case identifier = 0x01, appID, uid, requirement, created, backend, wrappedKey, publicKey
        case secret = 0x10, privateKey
    }

    static let fixedHeaderBytes = 14
    /// Largest sealed private key: a P-256 PKCS#8 key is 138 bytes, a TPM key blob about 220.
    static let sealedPrivateKeyLimit = 1024
    static let sealedSecretLimit = RightLimits.secretBytes + 1 + AESGCM.nonceByteCount + AESGCM.tagByteCount

    /// A new right: a fresh P-256 key pair and per-right key; `secret` may be absent.
    public static func create(owner: RightOwner, requirement: RightRequirement, secret: [UInt8]?,
                              created: Int64, protector: any KeyProtector) throws(RightsError) -> RightRecord {
        if let secret, secret.count > RightLimits.secretBytes {
            throw RightsError(.secretTooLarge, "a secret of \(secret.count) bytes; at most \(RightLimits.secretBytes)")
        }
        if case .biometryCurrentSet(let digest) = requirement, digest.count != RightRequirement.enrolledSetDigestByteCount {
            throw RightsError(.malformed, "an enrolled-set digest is \(RightRequirement.enrolledSetDigestByteCount) bytes, not \(digest.count)")
        }
        do {
            let rightKey = try SecureRandom.bytes(32)
            // The backend makes the key pair: in this process, or in its TPM.
            let (publicKey, storedPrivateKey) = try protector.makePrivateKey(context: KeyContext(owner: owner, purpose: .privateKey),
                                                                              rightKey: rightKey)
            let wrapped = try protector.wrap(rightKey, context: KeyContext(owner: owner, purpose: .rightKey))
            guard wrapped.count <= RightLimits.wrappedKeyBytes else { throw RightsError(.oversize, "a wrapped key of \(wrapped.count) bytes") }

            var fields = ByteWriter()
            fields.tagged(.identifier, Array(owner.identifier.utf8))
            fields.tagged(.appID, Array(owner.appID.utf8))
            var uid = ByteWriter()
            uid.u32(owner.uid)
            fields.tagged(.uid, uid.bytes)
            fields.tagged(.requirement, requirement.encoded)
            var time = ByteWriter()
            time.u64(UInt64(bitPattern: created))
            fields.tagged(.created, time.bytes)
            fields.tagged(.backend, Array(protector.backendName.utf8))
            fields.tagged(.wrappedKey, wrapped)
            fields.tagged(.publicKey, publicKey.x963Representation)

            var header = ByteWriter()
            header.bytes = magic
            header.u16(version)
            header.u32(UInt32(fixedHeaderBytes + fields.bytes.count))
            header.bytes += fields.bytes

            let secretPlaintext: [UInt8] = secret.map { [1] + $0 } ?? [0]
            let sealedSecret = try AESGCM.seal(secretPlaintext, key: rightKey, associatedData: header.bytes + [Tag.secret.rawValue]).combined
            let sealedPrivateKey = try AESGCM.seal(storedPrivateKey, key: rightKey,
                                                   associatedData: header.bytes + [Tag.privateKey.rawValue]).combined
            return RightRecord(owner: owner, requirement: requirement, created: created, backendName: protector.backendName,
                               publicKeyPoint: publicKey.x963Representation, header: header.bytes, wrappedKey: wrapped,
                               sealedSecret: sealedSecret, sealedPrivateKey: sealedPrivateKey)
        } catch let error as RightsError {
            throw error
        } catch let error as CryptoError {
            throw RightsError.crypto(error, "creating the right of \(owner)")
        } catch {
            throw RightsError(.crypto, "creating the right of \(owner): \(error)")
        }
    }

    /// What the record holds in memory, in bytes (its file's size).
    public var byteCount: Int { header.count + sealedSecret.count + sealedPrivateKey.count + 10 }

    /// The file's bytes.
    public func encode() -> [UInt8] {
        var out = ByteWriter()
        out.bytes = header
        out.tagged(.secret, sealedSecret)
        out.tagged(.privateKey, sealedPrivateKey)
        return out.bytes
    }

    /// Parses a right file. Structure only: `verify` (or opening a part) proves the bytes authentic.
    public static func decode(_ bytes: [UInt8]) throws(RightsError) -> RightRecord {
        guard bytes.count <= RightLimits.fileBytes else { throw RightsError(.oversize, "a right file of \(bytes.count) bytes; at most \(RightLimits.fileBytes)") }
        guard bytes.count >= magic.count else {
            throw RightsError(bytes == Array(magic.prefix(bytes.count)) ? .truncated : .badMagic, "a right file of \(bytes.count) bytes")
        }
        guard Array(bytes.prefix(magic.count)) == magic else { throw RightsError(.badMagic, "not a right file") }
        var reader = ByteReader(bytes, from: magic.count)
        let version = try reader.u16()
        guard version == Self.version else { throw RightsError(.unsupportedVersion, "right file format \(version); this build reads \(Self.version)") }
        let headerSize = Int(try reader.u32())
        guard headerSize >= fixedHeaderBytes, headerSize <= bytes.count else {
            throw RightsError(headerSize > bytes.count ? .truncated : .malformed, "header size \(headerSize) in a file of \(bytes.count) bytes")
        }

        let identifier = try reader.text(.identifier, limit: RightLimits.identifierBytes)
        let appID = try reader.text(.appID, limit: RightLimits.appIDBytes)
        let uidBytes = try reader.field(.uid, exactly: 4)
        let requirement = try RightRequirement.decode(reader.field(.requirement, limit: 1 + RightRequirement.enrolledSetDigestByteCount))
        let createdBytes = try reader.field(.created, exactly: 8)
        let backendName = try reader.text(.backend, limit: RightLimits.backendNameBytes)
        let wrappedKey = try reader.field(.wrappedKey, limit: RightLimits.wrappedKeyBytes)
        let publicKeyBytes = try reader.field(.publicKey, exactly: P256.x963ByteCount)
        guard reader.offset == headerSize else { throw RightsError(.malformed, "header fields end at \(reader.offset), header size says \(headerSize)") }
        let sealedSecret = try reader.field(.secret, limit: sealedSecretLimit)
        let sealedPrivateKey = try reader.field(.privateKey, limit: sealedPrivateKeyLimit)
        guard reader.offset == bytes.count else { throw RightsError(.malformed, "\(bytes.count - reader.offset) bytes after the last field") }

        let owner: RightOwner
        do {
            owner = try RightOwner(uid: ByteReader.u32(uidBytes), appID: appID, identifier: identifier)
        } catch {
            throw RightsError(.malformed, "owner: \(error.message)")
        }
        // On the curve, no more: ListRights builds no key (BENCHMARKS.md, "Curves").
        guard P256.isPublicPoint(publicKeyBytes) else { throw RightsError(.malformed, "public key: not a point of P-256") }
        let minimumSealed = AESGCM.nonceByteCount + AESGCM.tagByteCount
        guard sealedSecret.count > minimumSealed, sealedPrivateKey.count > minimumSealed else { throw RightsError(.malformed, "a sealed part too short") }
        return RightRecord(owner: owner, requirement: requirement, created: Int64(bitPattern: ByteReader.u64(createdBytes)),
                           backendName: backendName, publicKeyPoint: publicKeyBytes, header: Array(bytes.prefix(headerSize)),
                           wrappedKey: wrappedKey, sealedSecret: sealedSecret, sealedPrivateKey: sealedPrivateKey)
    }

    // MARK: Opening (after the person is verified)

    /// The secret, or nil if the right was saved without one.
    public func secret(using protector: any KeyProtector) throws(RightsError) -> [UInt8]? {
        let plaintext = try open(.secret, sealedSecret, rightKey(using: protector).1)
        guard let flag = plaintext.first, flag <= 1, flag == 1 || plaintext.count == 1 else { throw RightsError(.malformed, "sealed secret has no valid flag") }
        return flag == 1 ? Array(plaintext.dropFirst()) : nil
    }

    /// The private key of a software right; it must match the public key in
    /// the header. A TPM right's key never leaves the TPM: `.keyNotExportable`
    /// (use `openPrivateKey(using:)`, which works for both).
    public func privateKey(using protector: any KeyProtector) throws(RightsError) -> P256.PrivateKey {
        guard let software = try openPrivateKey(using: protector) as? SoftwareRightPrivateKey else {
            throw RightsError(.keyNotExportable, "the private key of \(owner) is in the TPM; only its operations are available")
        }
        return software.key
    }

    /// The private key, for signing, key agreement and decryption, wherever it
    /// lives (software or TPM); it matches the public key in the header.
    public func openPrivateKey(using protector: any KeyProtector) throws(RightsError) -> any RightPrivateKey {
        let (backend, key) = try rightKey(using: protector)
        return try privateKey(backend: backend, rightKey: key)
    }

    /// Proves the whole file authentic: unwraps the key, opens both parts
    /// (their plaintext is dropped at once) and matches the key pair. A TPM
    /// key is checked by its public area, without a TPM command.
    public func verify(using protector: any KeyProtector) throws(RightsError) {
        let (backend, key) = try rightKey(using: protector)
        _ = try open(.secret, sealedSecret, key)
        _ = try privateKey(backend: backend, rightKey: key)
    }

    /// The per-right key, and the protector of this right's backend.
    private func rightKey(using protector: any KeyProtector) throws(RightsError) -> (any KeyProtector, [UInt8]) {
        guard let backend = protector.protector(forBackend: backendName) else {
            throw RightsError(.wrongBackend, "\(owner) was saved by key backend \(backendName), not \(protector.backendName)")
        }
        let key = try backend.unwrap(wrappedKey, context: KeyContext(owner: owner, purpose: .rightKey))
        guard key.count == 32 else { throw RightsError(.malformed, "a per-right key of \(key.count) bytes") }
        return (backend, key)
    }

    private func privateKey(backend: any KeyProtector, rightKey: [UInt8]) throws(RightsError) -> any RightPrivateKey {
        let stored = try open(.privateKey, sealedPrivateKey, rightKey)
        let key = try backend.privateKey(stored: stored, context: KeyContext(owner: owner, purpose: .privateKey), rightKey: rightKey)
        guard key.publicKey.x963Representation == publicKeyPoint else { throw RightsError(.authenticationFailed, "the private key of \(owner) does not match its public key") }
        return key
    }

    private func open(_ tag: Tag, _ sealed: [UInt8], _ key: [UInt8]) throws(RightsError) -> [UInt8] {
        do {
            return try AESGCM.open(AESGCM.SealedBox(combined: sealed), key: key, associatedData: header + [tag.rawValue])
        } catch {
            throw RightsError.crypto(error, "the sealed \(tag == .secret ? "secret" : "private key") of \(owner)")
        }
    }
}

extension ByteWriter {
    mutating func tagged(_ tag: RightRecord.Tag, _ value: [UInt8]) {
        u8(tag.rawValue)
        field(value)
    }
}

/// Reads tagged fields; running out of bytes is `.truncated`.
struct ByteReader {
    let bytes: [UInt8]
    var offset: Int

    init(_ bytes: [UInt8], from offset: Int) {
        self.bytes = bytes
        self.offset = offset
    }

    mutating func take(_ count: Int) throws(RightsError) -> [UInt8] {
        guard count <= bytes.count - offset else { throw RightsError(.truncated, "needs \(count) bytes at \(offset); the file has \(bytes.count)") }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func u16() throws(RightsError) -> UInt16 { try take(2).reduce(0) { $0 << 8 | UInt16($1) } }
    mutating func u32() throws(RightsError) -> UInt32 { Self.u32(try take(4)) }
    static func u32(_ bytes: [UInt8]) -> UInt32 { bytes.reduce(0) { $0 << 8 | UInt32($1) } }
    static func u64(_ bytes: [UInt8]) -> UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }

    /// The next field, which must carry `tag` and at most `limit` bytes.
    mutating func field(_ tag: RightRecord.Tag, limit: Int) throws(RightsError) -> [UInt8] {
        let found = try take(1)[0]
        guard found == tag.rawValue else { throw RightsError(.malformed, "field \(found) where \(tag.rawValue) belongs") }
        let length = Int(try u32())
        guard length <= limit else { throw RightsError(.oversize, "field \(tag.rawValue) of \(length) bytes; at most \(limit)") }
        return try take(length)
    }

    mutating func field(_ tag: RightRecord.Tag, exactly count: Int) throws(RightsError) -> [UInt8] {
        let value = try field(tag, limit: count)
        guard value.count == count else { throw RightsError(.malformed, "field \(tag.rawValue) of \(value.count) bytes, not \(count)") }
        return value
    }

    mutating func text(_ tag: RightRecord.Tag, limit: Int) throws(RightsError) -> String {
        let value = try field(tag, limit: limit)
        guard let text = String(validating: value, as: UTF8.self) else { throw RightsError(.malformed, "field \(tag.rawValue) is not UTF-8") }
        return text
    }
}
