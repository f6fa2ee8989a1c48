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

    /// Enrolls `finger` for the calling user; returns once the print is stored.
    public static func enroll(_ finger: String, progress: @escaping @Sendable (EnrollProgress) -> Void = { _ in }) async throws {
        ServiceClient.shared.listenForEnrollment { status, stage, stages in
            progress(EnrollProgress(status: status, stage: stage, stages: stages))
        }
        defer { ServiceClient.shared.listenForEnrollment(nil) }
        try await call(LocalAuthBus.Method.enroll, [.string(finger)], timeout: .infinity)
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
