/// Every bound on rights, in one place (docs/RIGHTS-CRYPTO.md lists them).
/// A request past one is refused with the named error at once, nothing changed.
public enum RightLimits {
    /// An identifier, in UTF-8 bytes (`.identifierTooLong`). Apple sets none; ours bounds memory and file size.
    public static let identifierBytes = 256
    /// An app id (a D-Bus caller's app id or desktop file name), in UTF-8 bytes (`.appIDTooLong`).
    public static let appIDBytes = 256
    /// A secret (`.secretTooLarge`): passwords, tokens and keys, not documents.
    public static let secretBytes = 64 * 1024
    /// Rights one app of one user may keep (`.tooManyRights`): bounds disk use per caller.
    public static let rightsPerApp = 256
    /// Rights one user may keep over all their apps (`.tooManyRights`).
    public static let rightsPerUser = 1024
    /// App ids (with at least one right) one user may have (`.tooManyApps`):
    /// without it, new app ids multiply the per-app bound.
    public static let appsPerUser = 64
    /// Bytes of right files one user may have on disk (`.tooMuchData`): 128
    /// rights with a full 64 KiB secret.
    public static let bytesPerUser = 8 * 1024 * 1024
    /// A wrapped key blob: 61 bytes in software; room for a TPM's sealed object later.
    public static let wrappedKeyBytes = 4096
    /// A backend name ("software", later "tpm2").
    public static let backendNameBytes = 32
    /// A right file (`.oversize`); larger files are not even read.
    public static let fileBytes = 128 * 1024
}

/// Whose a right is: the user, the app, and the app's name for it.
/// The triple is bound into every wrapped key and sealed part, so a blob or a
/// file moved to another owner does not open.
public struct RightOwner: Hashable, Sendable, CustomStringConvertible {
    public let uid: UInt32
    public let appID: String
    public let identifier: String

    public init(uid: UInt32, appID: String, identifier: String) throws(RightsError) {
        try RightOwner.check(appID, "app id", limit: RightLimits.appIDBytes, tooLong: .appIDTooLong)
        try RightOwner.check(identifier, "identifier", limit: RightLimits.identifierBytes, tooLong: .identifierTooLong)
        self.uid = uid
        self.appID = appID
        self.identifier = identifier
    }

    static func check(_ name: String, _ what: String, limit: Int, tooLong: RightsError.Code) throws(RightsError) {
        guard !name.isEmpty else { throw RightsError(.invalidName, "empty \(what)") }
        guard name.utf8.count <= limit else { throw RightsError(tooLong, "\(what) of \(name.utf8.count) bytes; at most \(limit)") }
        // NUL would cut the name short wherever it meets C (logs, paths).
        guard !name.utf8.contains(0) else { throw RightsError(.invalidName, "\(what) contains NUL") }
    }

    /// The owner as bytes for associated data: uid, then each name length-prefixed,
    /// so that no two owners encode alike.
    var encoded: [UInt8] {
        var out = ByteWriter()
        out.u32(uid)
        out.field(Array(appID.utf8))
        out.field(Array(identifier.utf8))
        return out.bytes
    }

    /// For logs: uid, app and identifier, each cut to 64 bytes with control
    /// characters shown as "?", so a caller's name cannot forge log lines.
    public var description: String {
        "uid \(uid) app \(Self.loggable(appID)) right \"\(Self.loggable(identifier))\""
    }

    public static func loggable(_ name: String) -> String {
        var shown = ""
        for scalar in name.unicodeScalars {
            guard shown.utf8.count < 64 else { return shown + "…" }
            shown.unicodeScalars.append(scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value) ? "?" : scalar)
        }
        return shown
    }
}

/// Big-endian integers and length-prefixed fields.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xff)] }
    mutating func u32(_ value: UInt32) { for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((value >> UInt32(shift)) & 0xff)) } }
    mutating func u64(_ value: UInt64) { for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((value >> UInt64(shift)) & 0xff)) } }
    /// A 4-byte length, then the bytes.
    mutating func field(_ value: [UInt8]) {
        u32(UInt32(value.count))
        bytes += value
    }
}
