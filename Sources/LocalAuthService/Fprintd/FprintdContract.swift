import DBusCore
import LocalAuthShared

/// fprintd 1.94's names (dbus/net.reactivated.Fprint.*.xml): the bus name,
/// objects, interfaces, errors, polkit actions and status strings that
/// `localauthd --fprintd` serves (docs/FPRINTD.md).
enum FprintdBus {
    static let serviceName = "net.reactivated.Fprint"
    static let managerPath = "/net/reactivated/Fprint/Manager"
    static let managerInterface = "net.reactivated.Fprint.Manager"
    static let devicePathPrefix = "/net/reactivated/Fprint/Device/"
    static let deviceInterface = "net.reactivated.Fprint.Device"

    static func devicePath(_ id: Int) -> String { devicePathPrefix + String(id) }

    /// fprintd's error names, exactly.
    enum Error: String, CaseIterable {
        case claimDevice = "net.reactivated.Fprint.Error.ClaimDevice"
        case alreadyInUse = "net.reactivated.Fprint.Error.AlreadyInUse"
        case `internal` = "net.reactivated.Fprint.Error.Internal"
        case permissionDenied = "net.reactivated.Fprint.Error.PermissionDenied"
        case noEnrolledPrints = "net.reactivated.Fprint.Error.NoEnrolledPrints"
        case noActionInProgress = "net.reactivated.Fprint.Error.NoActionInProgress"
        case invalidFingername = "net.reactivated.Fprint.Error.InvalidFingername"
        case noSuchDevice = "net.reactivated.Fprint.Error.NoSuchDevice"
        case printsNotDeleted = "net.reactivated.Fprint.Error.PrintsNotDeleted"
        case printsNotDeletedFromDevice = "net.reactivated.Fprint.Error.PrintsNotDeletedFromDevice"

        func callAsFunction(_ message: String) -> DBusError { DBusError(DBusError.Name(rawValue: rawValue), message) }
    }

    /// fprintd's polkit actions. A method that lists several needs any one of them.
    enum Action: String {
        case verify = "net.reactivated.fprint.device.verify"
        case enroll = "net.reactivated.fprint.device.enroll"
        case setUsername = "net.reactivated.fprint.device.setusername"
    }

    enum Signal {
        static let verifyFingerSelected = "VerifyFingerSelected"
        static let verifyStatus = "VerifyStatus"
        static let enrollStatus = "EnrollStatus"
    }

    enum Property {
        static let name = "name"
        static let numEnrollStages = "num-enroll-stages"
        static let scanType = "scan-type"
        static let fingerPresent = "finger-present"
        static let fingerNeeded = "finger-needed"
        static let all = [name, numEnrollStages, scanType, fingerPresent, fingerNeeded]
    }

    /// "any": every enrolled finger (VerifyStart only).
    static let anyFinger = "any"

    /// VerifyStatus results; `done` says whether the client should now call VerifyStop.
    enum VerifyResult: String, CaseIterable {
        case noMatch = "verify-no-match"
        case match = "verify-match"
        case retryScan = "verify-retry-scan"
        case swipeTooShort = "verify-swipe-too-short"
        case fingerNotCentered = "verify-finger-not-centered"
        case removeAndRetry = "verify-remove-and-retry"
        case disconnected = "verify-disconnected"
        case unknownError = "verify-unknown-error"

        var done: Bool {
            switch self {
            case .retryScan, .swipeTooShort, .fingerNotCentered, .removeAndRetry: false
            default: true
            }
        }

        init(_ retry: RetryKind) {
            switch retry {
            case .general: self = .retryScan
            case .tooShort: self = .swipeTooShort
            case .centerFinger: self = .fingerNotCentered
            case .removeFinger: self = .removeAndRetry
            }
        }
    }

    /// EnrollStatus results.
    enum EnrollResult: String, CaseIterable {
        case completed = "enroll-completed"
        case failed = "enroll-failed"
        case stagePassed = "enroll-stage-passed"
        case retryScan = "enroll-retry-scan"
        case swipeTooShort = "enroll-swipe-too-short"
        case fingerNotCentered = "enroll-finger-not-centered"
        case removeAndRetry = "enroll-remove-and-retry"
        case dataFull = "enroll-data-full"
        case duplicate = "enroll-duplicate"
        case disconnected = "enroll-disconnected"
        case unknownError = "enroll-unknown-error"

        var done: Bool {
            switch self {
            case .stagePassed, .retryScan, .swipeTooShort, .fingerNotCentered, .removeAndRetry: false
            default: true
            }
        }

        init(_ retry: RetryKind) {
            switch retry {
            case .general: self = .retryScan
            case .tooShort: self = .swipeTooShort
            case .centerFinger: self = .fingerNotCentered
            case .removeFinger: self = .removeAndRetry
            }
        }
    }
}

/// One row per method of net.reactivated.Fprint.Device, as MethodTable.swift
/// does for org.example.LocalAuth: the signature, the polkit actions (any one
/// suffices), whether the call must come from the claimer, and the handler.
/// The device checks the claim first, then the username, then polkit, as fprintd does.
struct FprintdMethodSpec {
    /// Which claim state the call needs.
    enum ClaimRule {
        /// The device must be unclaimed (Claim).
        case unclaimed
        /// Claimed by this caller, with no Claim still opening.
        case claimed
        /// Claimed by this caller, or unclaimed (DeleteEnrolledFingers).
        case claimedOrFree
        /// Whatever the claim (ListEnrolledFingers).
        case anytime
    }

    let signature: String
    let actions: [FprintdBus.Action]
    let claim: ClaimRule
    /// The first argument is a username (empty: the caller); another user needs setusername.
    var takesUsername = false
    let handler: @ServiceActor (FprintdDevice, FprintdRequest) async throws(DBusError) -> [DBusValue]
}

/// A call to a device, with its caller resolved.
struct FprintdRequest {
    let call: IncomingCall
    /// Who calls (Callers/): one record per connection, as for org.example.LocalAuth.
    let caller: CallerRecord
    /// The call in the service's registry (bounds, SIGTERM, the caller leaving).
    let record: CallRecord
    var uid: UInt32 { caller.uid }
    /// For methods that take a username: the user it names once allowed.
    let username: String?
    var sender: String { call.sender }
    /// The body, decoded once when the call was registered (`Message.arguments` decodes on every access).
    var arguments: [DBusValue] { record.arguments }
}

extension FprintdDevice {
    nonisolated static let methods: [String: FprintdMethodSpec] = [
        "Claim": FprintdMethodSpec(signature: "s", actions: [.verify, .enroll], claim: .unclaimed, takesUsername: true,
                                   handler: { device, request throws(DBusError) in try await device.claim(request) }),
        "Release": FprintdMethodSpec(signature: "", actions: [], claim: .claimed,
                                     handler: { device, request throws(DBusError) in try await device.release(request) }),
        "ListEnrolledFingers": FprintdMethodSpec(signature: "s", actions: [.verify], claim: .anytime, takesUsername: true,
                                                 handler: { device, request throws(DBusError) in try device.listEnrolledFingers(request) }),
        "DeleteEnrolledFingers": FprintdMethodSpec(signature: "s", actions: [.enroll], claim: .claimedOrFree, takesUsername: true,
                                                   handler: { device, request throws(DBusError) in try await device.deleteEnrolledFingers(request) }),
        "DeleteEnrolledFingers2": FprintdMethodSpec(signature: "", actions: [.enroll], claim: .claimed,
                                                    handler: { device, request throws(DBusError) in try await device.deleteEnrolledFingers2(request) }),
        "DeleteEnrolledFinger": FprintdMethodSpec(signature: "s", actions: [.enroll], claim: .claimed,
                                                  handler: { device, request throws(DBusError) in try await device.deleteEnrolledFinger(request) }),
        "VerifyStart": FprintdMethodSpec(signature: "s", actions: [.verify], claim: .claimed,
                                         handler: { device, request throws(DBusError) in try await device.verifyStart(request) }),
        // Stopping needs no action: the caller was authorized to start.
        "VerifyStop": FprintdMethodSpec(signature: "", actions: [], claim: .claimed,
                                        handler: { device, request throws(DBusError) in try await device.verifyStop(request) }),
        "EnrollStart": FprintdMethodSpec(signature: "s", actions: [.enroll], claim: .claimed,
                                         handler: { device, request throws(DBusError) in try await device.enrollStart(request) }),
        "EnrollStop": FprintdMethodSpec(signature: "", actions: [], claim: .claimed,
                                        handler: { device, request throws(DBusError) in try await device.enrollStop(request) }),
    ]

    /// The manager's methods and their signatures (no arguments, no polkit).
    nonisolated static let managerMethods: [String: String] = ["GetDevices": "", "GetDefaultDevice": ""]
}
