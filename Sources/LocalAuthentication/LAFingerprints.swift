import DBusCore
import Foundation
import LocalAuthShared

/// Enrollment of the calling user's fingers (a Linux addition: on Apple's
/// platforms the system settings do this). Needs polkit's
/// `org.example.LocalAuth.enroll`; progress comes through `progress`.
public enum LAFingerprints {
    /// Finger names as fprintd spells them.
    public static let fingerNames: [String] = FingerName.allCases.map(\.rawValue)

    /// One step of an enrollment.
    public struct EnrollProgress: Sendable, Hashable {
        /// `enroll-stage-passed`, `enroll-retry-scan`, `enroll-completed`, …
        public let status: String
        public let stage: Int
        public let stages: Int
    }

    /// An error from the service that is not an `LAError` (AlreadyEnrolled,
    /// NotEnrolled, PermissionDenied, InvalidArgs, …), with its D-Bus name.
    public struct ServiceError: Error, Sendable, CustomStringConvertible {
        public let name: String
        public let message: String
        /// The last component of the name, e.g. `AlreadyEnrolled`.
        public var shortName: String { String(name.split(separator: ".").last ?? "") }
        public var description: String { "\(shortName): \(message)" }
    }

    /// One enrolled print, as `enrolledPrints(user:)` lists them.
    public struct EnrolledPrint: Sendable, Hashable {
        public let finger: String
        /// Where it is stored: `localauth` (the service's own store) or
        /// `fprintd` (fprintd's store, which the service only reads).
        public let source: String
        /// The reader it was made on: libfprint's driver and device id.
        public let driver: String
        public let deviceID: String
        /// When it was enrolled (fprintd's prints: the day only).
        public let created: Date?
        /// Whether the reader that serves this user offers this print now
        /// (false: made on another reader, or shadowed by a newer print of the same finger).
        public let inUse: Bool
        /// Whether the service leaves this print alone: fprintd's, unless the
        /// service serves fprintd's interface itself (`localauthd --fprintd`).
        public let readOnly: Bool

        public var reader: String { "\(driver)/\(deviceID)" }
    }

    /// Enrolls `finger` for the calling user; returns once the print is stored.
    public static func enroll(_ finger: String, progress: @escaping @Sendable (EnrollProgress) -> Void = { _ in }) async throws {
        ServiceClient.shared.listenForEnrollment { status, stage, stages in
            progress(EnrollProgress(status: status, stage: stage, stages: stages))
        }
        defer { ServiceClient.shared.listenForEnrollment(nil) }
        try await call(LocalAuthBus.Method.enroll, [.string(finger)], timeout: .infinity)
    }

    /// Enrolls `finger` for `user` (nil: the calling user; another user needs
    /// polkit's `org.example.LocalAuth.manage`). `replace`: enroll it again
    /// even if that finger is enrolled (else AlreadyEnrolled).
    public static func enroll(_ finger: String, user: String?, replace: Bool = false,
                              progress: @escaping @Sendable (EnrollProgress) -> Void = { _ in }) async throws {
        ServiceClient.shared.listenForEnrollment { status, stage, stages in
            progress(EnrollProgress(status: status, stage: stage, stages: stages))
        }
        defer { ServiceClient.shared.listenForEnrollment(nil) }
        try await call(LocalAuthBus.Method.enrollWithOptions, [.string(finger), options(user: user, replace: replace)],
                       timeout: .infinity)
    }

    /// Every enrolled print of `user` (nil: the calling user), from every
    /// source and reader, with where it comes from.
    public static func enrolledPrints(user: String? = nil) async throws -> [EnrolledPrint] {
        let reply = try await call(LocalAuthBus.Method.listEnrolledPrints, [options(user: user)])
        guard case .array(_, let rows)? = reply.first else { return [] }
        return rows.compactMap { row -> EnrolledPrint? in
            guard let entry = row.stringKeyedDictionary, let finger = entry[LocalAuthBus.PrintKey.finger]?.string else { return nil }
            var created: Date?
            if case .int64(let seconds)? = entry[LocalAuthBus.PrintKey.created] {
                created = Date(timeIntervalSince1970: TimeInterval(seconds))
            }
            return EnrolledPrint(finger: finger, source: entry[LocalAuthBus.PrintKey.source]?.string ?? "",
                                 driver: entry[LocalAuthBus.PrintKey.driver]?.string ?? "",
                                 deviceID: entry[LocalAuthBus.PrintKey.deviceID]?.string ?? "",
                                 created: created, inUse: entry[LocalAuthBus.PrintKey.inUse]?.bool ?? false,
                                 // A service that does not say: fprintd's prints are read-only to it.
                                 readOnly: entry[LocalAuthBus.PrintKey.readOnly]?.bool
                                     ?? (entry[LocalAuthBus.PrintKey.source]?.string == "fprintd"))
        }
    }

    /// One print kept on a reader's chip, as `readerPrints()` lists them.
    public struct ReaderPrint: Sendable, Hashable {
        public let driver: String
        public let deviceID: String
        /// An enrolled record (of any account) owns it; false: an orphan.
        public let owned: Bool
        public var reader: String { "\(driver)/\(deviceID)" }
    }

    /// For administrators: the prints on the chips of the readers that keep
    /// prints (match on chip), and whether an enrolled record owns each.
    public static func readerPrints() async throws -> [ReaderPrint] {
        let reply = try await call(LocalAuthBus.Method.listReaderPrints, [.dictionary([:])])
        guard case .array(_, let rows)? = reply.first else { return [] }
        return rows.compactMap { row -> ReaderPrint? in
            guard let entry = row.stringKeyedDictionary else { return nil }
            return ReaderPrint(driver: entry[LocalAuthBus.PrintKey.driver]?.string ?? "",
                               deviceID: entry[LocalAuthBus.PrintKey.deviceID]?.string ?? "",
                               owned: entry[LocalAuthBus.PrintKey.owned]?.bool ?? true)
        }
    }

    /// For administrators: removes from the chips the prints no enrolled
    /// record owns; returns how many went.
    public static func removeOrphanPrints() async throws -> Int {
        let reply = try await call(LocalAuthBus.Method.removeOrphanPrints, [.dictionary([:])])
        return Int(reply.first?.uint32 ?? 0)
    }

    /// Lifts the biometry lockout of `user` (nil: the calling user), as an
    /// administrator may (polkit's org.example.LocalAuth.manage): the same
    /// lockout every path counts (apps, PAM, fprintd's contract).
    public static func resetLockout(user: String?) async throws {
        try await call(LocalAuthBus.Method.resetLockout, [.string(user ?? "")])
    }

    /// Deletes `finger` of `user` (nil: the calling user) from the service's store.
    public static func delete(_ finger: String, user: String?) async throws {
        try await call(LocalAuthBus.Method.deleteEnrolledFingerWithOptions, [.string(finger), options(user: user)])
    }

    /// Deletes all prints of `user` (nil: the calling user) from the service's store.
    public static func deleteAll(user: String?) async throws {
        try await call(LocalAuthBus.Method.deleteEnrolledFingersWithOptions, [options(user: user)])
    }

    private static func options(user: String?, replace: Bool = false) -> DBusValue {
        var entries: [String: DBusValue] = [:]
        if let user { entries[LocalAuthBus.PrintOption.user] = .string(user) }
        if replace { entries[LocalAuthBus.PrintOption.replace] = .boolean(true) }
        return .dictionary(entries)
    }

    /// The calling user's enrolled fingers on this machine's reader.
    public static func enrolledFingers() async throws -> [String] {
        try await call(LocalAuthBus.Method.listEnrolledFingers).first?.stringArray ?? []
    }

    public static func delete(_ finger: String) async throws {
        try await call(LocalAuthBus.Method.deleteEnrolledFinger, [.string(finger)])
    }

    public static func deleteAll() async throws {
        try await call(LocalAuthBus.Method.deleteEnrolledFingers)
    }

    @discardableResult
    private static func call(_ member: String, _ arguments: [DBusValue] = [], timeout: Double? = nil) async throws -> [DBusValue] {
        do {
            return try await ServiceClient.shared.call(member, arguments, timeout: timeout)
        } catch {
            if LocalAuthErrorCode(dbusName: error.name.rawValue) != nil { throw LAError(error) }
            throw ServiceError(name: error.name.rawValue, message: error.message)
        }
    }
}
