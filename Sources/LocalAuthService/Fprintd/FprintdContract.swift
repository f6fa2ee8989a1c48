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

    /// fprintd's error names, exactly; the service's errors reach them
    /// through `ErrorTable.fprintd`.
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
    enum VerifyResult: String, CaseIterable, RetryStatus {
        case noMatch = "verify-no-match"
        case match = "verify-match"
        case retryScan = "verify-retry-scan"
        case swipeTooShort = "verify-swipe-too-short"
        case fingerNotCentered = "verify-finger-not-centered"
        case removeAndRetry = "verify-remove-and-retry"
        /// fprintd 1.94.5 (Debian 13): libfprint's FP_DEVICE_RETRY_TOO_FAST.
        case tooFast = "verify-too-fast"
        case disconnected = "verify-disconnected"
        case unknownError = "verify-unknown-error"

        var done: Bool { !isRetry }
    }

    /// EnrollStatus results.
    enum EnrollResult: String, CaseIterable, RetryStatus {
        case completed = "enroll-completed"
        case failed = "enroll-failed"
        case stagePassed = "enroll-stage-passed"
        case retryScan = "enroll-retry-scan"
        case swipeTooShort = "enroll-swipe-too-short"
        case fingerNotCentered = "enroll-finger-not-centered"
        case removeAndRetry = "enroll-remove-and-retry"
        /// fprintd 1.94.5 (Debian 13): libfprint's FP_DEVICE_RETRY_TOO_FAST.
        case tooFast = "enroll-too-fast"
        case dataFull = "enroll-data-full"
        case duplicate = "enroll-duplicate"
        case disconnected = "enroll-disconnected"
        case unknownError = "enroll-unknown-error"

        var done: Bool { !isRetry && self != .stagePassed }
    }
}

/// The five statuses of a scan to try again, which VerifyStatus and
/// EnrollStatus both send, each under its own prefix ("verify-retry-scan",
/// "enroll-retry-scan"): one mapping from libfprint's retry for both.
protocol RetryStatus: Equatable {
    static var retryScan: Self { get }
    static var swipeTooShort: Self { get }
    static var fingerNotCentered: Self { get }
    static var removeAndRetry: Self { get }
    static var tooFast: Self { get }
}

extension RetryStatus {
    init(_ retry: RetryKind) {
        switch retry {
        case .general: self = .retryScan
        case .tooShort: self = .swipeTooShort
        case .centerFinger: self = .fingerNotCentered
        case .removeFinger: self = .removeAndRetry
        case .tooFast: self = .tooFast
        }
    }

    /// A retry: the operation goes on, so the client must not stop it yet (`done` is false).
    var isRetry: Bool { [.retryScan, .swipeTooShort, .fingerNotCentered, .removeAndRetry, .tooFast].contains(self) }
}

extension ErrorTable {
    /// fprintd's names for the service's errors: on net.reactivated.Fprint
    /// only these ten and D-Bus's own, never org.example.LocalAuth's.
    static let fprintd = ErrorTable { kind in
        let name: FprintdBus.Error
        switch kind {
        case .la(.biometryNotAvailable): name = .noSuchDevice
        case .la(.biometryNotEnrolled), .notEnrolled: name = .noEnrolledPrints
        case .la(.biometryLockout), .la(.authenticationFailed), .permissionDenied, .notAtTheReader, .unprovenSandbox,
             .notAuthorized:
            name = .permissionDenied
        // Interrupted (SystemCancel and the like), stopping, failures below the contract.
        case .la, .failed, .noSuchUser, .readerInUse, .readerCoolingDown, .alreadyEnrolled, .readOnly, .duplicatePrint,
             .readerStorageFull, .promptAgentExists, .rightNotFound, .rightInvalidated, .noSecret, .accountChanged,
             .tpmNotResponding:
            name = .internal
        // The router answers a wrong signature itself: a bad argument here is a finger name.
        case .invalidArgs: name = .invalidFingername
        case .busy: name = .alreadyInUse
        case .storageFailed: name = .printsNotDeleted
        case .readerPrintNotDeleted: name = .printsNotDeletedFromDevice
        case .notClaimed: name = .claimDevice
        case .nothingInProgress: name = .noActionInProgress
        case .limitExceeded: return DBusError.Name.limitsExceeded.rawValue
        }
        return name.rawValue
    }
}

/// A finger name as fprintd's methods take it: any string, judged by the
/// handler after the claim (fprintd's order), so decoding cannot fail.
struct FingerNameArgument: CallArguments {
    let name: String
    init(_ arguments: [DBusValue]) throws(ServiceError) { name = arguments[0].string ?? "" }
}

/// A username: empty or the caller's own means the caller; another user
/// needs `setusername` (the router asks before the name is looked up).
struct UsernameArgument: CallArguments {
    let username: String
    var namedUser: String? { username.isEmpty ? nil : username }

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        username = arguments[0].string ?? ""
        guard username.utf8.count <= 256 else { throw ServiceError(.failed, "the user name is too long") }
    }
}

/// The claim a Device method needs, checked before polkit and again after (fprintd's order).
enum ClaimRule {
    /// The device must be unclaimed (Claim).
    case unclaimed
    /// Claimed by this caller.
    case claimed
    /// Claimed by this caller, or unclaimed (DeleteEnrolledFingers).
    case claimedOrFree
    /// Whatever the claim (ListEnrolledFingers).
    case anytime
}

extension FprintdDevice {
    /// net.reactivated.Fprint.Device: one row per method, as LocalAuth/LocalAuthContract.swift
    /// has for org.example.LocalAuth. fprintd asks polkit with interaction
    /// allowed; a method that lists several actions needs any one of them.
    nonisolated static let contract = BusContract<FprintdDevice>(
        interface: FprintdBus.deviceInterface, methods: methods, errors: .fprintd, introspection: FprintdServer.deviceXML,
        properties: { device in device.propertyValues }, refusal: FprintdServer.refusal)

    nonisolated static let methods: [String: MethodSpec<FprintdDevice>] = [
        "Claim": row("s", [.verify, .enroll], .unclaimed, UsernameArgument.self) { device, call throws(ServiceError) in
            try await device.claim(call)
        },
        "Release": row("", [], .claimed, NoArguments.self) { device, call throws(ServiceError) in
            try await device.release(call.request)
        },
        "ListEnrolledFingers": row("s", [.verify], .anytime, UsernameArgument.self) { device, call throws(ServiceError) in
            try device.listEnrolledFingers(call.request)
        },
        "DeleteEnrolledFingers": row("s", [.enroll], .claimedOrFree, UsernameArgument.self) { device, call throws(ServiceError) in
            try await device.deleteEnrolledFingers(call.request)
        },
        "DeleteEnrolledFingers2": row("", [.enroll], .claimed, NoArguments.self) { device, call throws(ServiceError) in
            try await device.deleteEnrolledFingers2(call.request)
        },
        "DeleteEnrolledFinger": row("s", [.enroll], .claimed, FingerNameArgument.self) { device, call throws(ServiceError) in
            try await device.deleteEnrolledFinger(call)
        },
        // The Starts answer once the reader is open, before any scan: no row
        // here `scans` (MethodSpec). Sleep ends their operations through the
        // reader queue (FprintdOperation's ticket) and their claims through
        // `FprintdDevice.sleepBegan`, and a Start still waiting says so in
        // fprintd's words (FprintdOperations.swift, `startError`).
        "VerifyStart": row("s", [.verify], .claimed, FingerNameArgument.self) { device, call throws(ServiceError) in
            try await device.verifyStart(call)
        },
        // Stopping needs no action: the caller was authorized to start.
        "VerifyStop": row("", [], .claimed, NoArguments.self) { device, call throws(ServiceError) in
            try await device.verifyStop(call.request)
        },
        "EnrollStart": row("s", [.enroll], .claimed, FingerNameArgument.self) { device, call throws(ServiceError) in
            try await device.enrollStart(call)
        },
        "EnrollStop": row("", [], .claimed, NoArguments.self) { device, call throws(ServiceError) in
            try await device.enrollStop(call.request)
        },
    ]

    private nonisolated static func row<Arguments: CallArguments>(
        _ signature: String, _ actions: [FprintdBus.Action], _ claim: ClaimRule, _ arguments: Arguments.Type,
        handler: @escaping @ServiceActor @Sendable (FprintdDevice, Call<Arguments>) async throws(ServiceError) -> [DBusValue]
    ) -> MethodSpec<FprintdDevice> {
        MethodSpec(
            signature: signature,
            authorization: Authorization(actions: actions.map(\.rawValue), interactive: true,
                                         anotherUser: .also(FprintdBus.Action.setUsername.rawValue)),
            arguments,
            admits: { device, request throws(ServiceError) in try device.checkClaim(claim, sender: request.sender, callerUID: request.uid) },
            handler: handler)
    }
}

extension FprintdServer {
    /// net.reactivated.Fprint.Manager: no arguments, no polkit.
    nonisolated static let contract = BusContract<FprintdServer>(
        interface: FprintdBus.managerInterface,
        methods: [
            "GetDevices": MethodSpec(signature: "", authorization: .none, NoArguments.self) { server, _ throws(ServiceError) in
                [.array("o", server.devices.map { .objectPath(ObjectPath(stringLiteral: $0.path)) })]
            },
            "GetDefaultDevice": MethodSpec(signature: "", authorization: .none, NoArguments.self) { server, call throws(ServiceError) in
                [.objectPath(ObjectPath(stringLiteral: try server.defaultDevice(for: call.uid).path))]
            },
        ],
        errors: .fprintd, introspection: managerXML, properties: nil, refusal: refusal)

    /// polkit's no, in fprintd's words.
    nonisolated static let refusal: @Sendable (String, Authorizer.Decision) -> ServiceError = { action, _ in
        ServiceError(.permissionDenied, "Not Authorized: \(action)")
    }
}
