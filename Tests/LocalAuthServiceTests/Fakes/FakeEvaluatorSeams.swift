import DBusCore
@testable import LocalAuthService
import LocalAuthShared

// Fakes for the Evaluator's seams (Sources/LocalAuthService/Evaluation/EvaluatorSeams.swift):
// a reader that answers what the test scripts, prints in memory, the caller's
// presence and password rules, polkit's password verdict, and a recorder of
// the statuses. No libfprint, no bus, no polkit.

/// A print a fake reader compares with.
final class FakeTemplate: PrintTemplate {}

/// One fingerprint reader, and its sessions. Each scan takes the next step of
/// `script`; with none left it waits until the test adds one or the
/// evaluation cancels it (then it fails as libfprint does: cancelled).
@ServiceActor
final class FakeReader: EvaluationReaders, ReaderOpener, ReaderSession {
    enum Step {
        case match(Int?)
        case noMatch
        case retry(RetryKind)
        case fail(GLibError)
    }

    let identity = Readers.Identity(driver: "fake", deviceID: "0")
    /// Whether the reader serves users at all (nil from `reader(for:)` if not).
    var present = true
    /// Whether a person can touch it (a Device object's reader: fprintd's).
    var reachable = true
    /// Opening fails with this (another program holds the device).
    var openError: ServiceError?
    var warm = false
    var script: [Step] = []
    private(set) var opens = 0
    private(set) var releases = 0
    private(set) var scans = 0
    /// The fingers of each scan's gallery, in the order passed.
    private(set) var galleries: [[FingerName]] = []
    /// Whether the scan in progress waits for a step now.
    private(set) var waiting = false
    /// Scans that ended because the evaluation cancelled them.
    private(set) var cancelledScans = 0
    /// A verify-only reader (libfprint's `virtual_device`) and the finger the
    /// person touches it with: once the script is used up, each scan
    /// compares that finger with the gallery's first print only, as
    /// `fp_device_verify` does (Readers.identify on such a reader).
    var verifyOnlyPerson: FingerName?

    // Domains no GQuark will have (they count up from 1), so that no fake
    // error is taken for one of libfprint's (`failure`).
    static let removed = GLibError(domain: .max - 7, code: 1, message: "the device was removed")
    static let cancelled = GLibError(domain: .max - 8, code: 19, message: "Operation was cancelled")
    static let nobodyCame = GLibError(domain: .max - 9, code: 0, message: "the fake reader waited two seconds")
    static let noReader = ServiceErrors.la(.biometryNotAvailable, "no fingerprint reader is available")

    var isOpen: Bool { opens > releases }

    func reader(for uid: UInt32) -> Readers.Identity? { present ? identity : nil }

    var noReaderError: ServiceError { Self.noReader }

    func isReachable(_ reader: Readers.Identity) -> Bool { present && reachable }

    func isWarm(_ reader: Readers.Identity) -> Bool { warm }

    func open(_ reader: Readers.Identity, _ opening: ReaderOpening) async throws(ServiceError) -> any ReaderSession {
        if let interruption = opening.interruption() { throw interruption.error }
        if let openError { throw openError }
        opens += 1
        return self
    }

    // An enrollment's and a chip's operations: a verify's tests never ask them.
    func enroll(
        _ finger: FingerName, username: String, cancellable: Cancellable,
        progress: @escaping @ServiceActor (Int, RetryKind?) -> Void
    ) async throws(GLibError) -> any PrintTemplate { throw Self.removed }
    func deleteFromChip(_ print: any PrintTemplate) async throws(GLibError) {}
    func chipPrints() async throws(GLibError) -> [GObjectRef] { [] }

    func scan(_ gallery: [EnrolledPrint], cancellable: Cancellable) async throws(GLibError) -> ScanOutcome {
        precondition(isOpen, "a scan on a reader nobody opened")
        scans += 1
        galleries.append(gallery.map(\.finger))
        if script.isEmpty, let person = verifyOnlyPerson {
            return gallery.first?.finger == person ? .match(0) : .noMatch
        }
        waiting = true
        defer { waiting = false }
        var waited = 0
        while script.isEmpty {
            if cancellable.isCancelled {
                cancelledScans += 1
                throw Self.cancelled
            }
            // A real reader waits for ever; a test must not hang.
            waited += 1
            guard waited < 2000 else { throw Self.nobodyCame }
            try? await Task.sleep(for: .milliseconds(1))
        }
        switch script.removeFirst() {
        case .match(let index): return .match(index)
        case .noMatch: return .noMatch
        case .retry(let kind): return .retry(kind)
        case .fail(let error): throw error
        }
    }

    func unusable(_ error: GLibError) -> ServiceError? {
        error.domain == Self.removed.domain ? Interruption.readerRemoved.error : nil
    }

    /// The fake's errors, as fprintd's statuses tell them apart.
    func failure(_ error: GLibError) -> ReaderFailure {
        // libfprint's own errors as the service classifies them (FprintdWiring.swift).
        if FprintDeviceError(error) != nil { return ReaderFailure(error) }
        return switch error.domain {
        case Self.removed.domain: .removed
        case Self.cancelled.domain: .cancelled
        case Self.full.domain: .dataFull
        default: .other
        }
    }

    static let full = GLibError(domain: .max - 11, code: 0, message: "the reader's storage is full")

    func release() { releases += 1 }
}

/// Each user's prints, in memory.
@ServiceActor
final class FakePrints: EvaluationPrints {
    var byUser: [UInt32: [EnrolledPrint]] = [:]

    func prints(of uid: UInt32, on reader: Readers.Identity) -> [EnrolledPrint] { byUser[uid] ?? [] }

    func hasPrints(of uid: UInt32, on reader: Readers.Identity) -> Bool { !(byUser[uid] ?? []).isEmpty }

    func enroll(_ finger: FingerName, for uid: UInt32, stamp: UInt8 = 1) {
        byUser[uid, default: []].append(
            EnrolledPrint(
                finger: finger, source: .localauth, stamp: [stamp],
                template: FakeTemplate()))
    }
}

/// The caller's presence and the account's password rules.
@ServiceActor
final class FakeEnvironment: EvaluationEnvironment {
    var presence: Presence = .local
    /// A connection's own presence, where it differs from `presence`.
    var presences: [String: Presence] = [:]
    /// What logind would count: a test bumps it for a switch of the session in front.
    var frontChanges: UInt64 = 0
    var hasPassword = true
    var passwordNeededError: ServiceError?
    private(set) var passwordsGiven: [UInt32] = []
    private(set) var presenceAsked = 0

    func presence(of caller: CallerRecord) async -> Presence {
        presenceAsked += 1
        return presences[caller.sender] ?? presence
    }

    func passwordNeeded(_ uid: UInt32) -> ServiceError? { passwordNeededError }

    func passwordGiven(_ uid: UInt32) { passwordsGiven.append(uid) }

    /// The uids whose lockout count changed, in order.
    private(set) var lockoutChanges: [UInt32] = []
    func lockoutChanged(_ uid: UInt32) { lockoutChanges.append(uid) }

    func hasPassword(_ uid: UInt32) -> Bool { hasPassword }

    func identity(of sender: String) -> CallerIdentity? { nil }
}

/// polkit's password check: waits until the test gives a verdict, or the
/// evaluation cancels it (then denied, as polkit says).
@ServiceActor
final class FakeOwnerPassword: OwnerPassword {
    var verdict: Authorizer.Decision?
    private(set) var asked = 0
    private(set) var waiting = false
    private(set) var cancelled = false
    private(set) var lastDetails: [String: String] = [:]

    func check(
        sender: String, details: [String: String], timeout: Double,
        cancellable: Cancellable
    ) async -> Authorizer.Decision {
        asked += 1
        lastDetails = details
        waiting = true
        defer { waiting = false }
        var waited = 0
        while verdict == nil {
            if cancellable.isCancelled {
                cancelled = true
                return .denied("the check was cancelled")
            }
            // polkit's agent may wait for ever; a test must not hang.
            waited += 1
            guard waited < 2000 else { return .denied("the fake password check waited two seconds") }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return verdict!
    }
}

/// What the caller and its prompt would hear.
@ServiceActor
final class FakeObservers: EvaluationObservers {
    private(set) var statuses: [EvaluationProgress] = []
    private(set) var started = 0
    private(set) var endings: [ServiceError?] = []

    func evaluationStarted(_ evaluation: Evaluation, record: CallRecord, policy: PolicyValue) async { started += 1 }

    func evaluationEnded(_ evaluation: Evaluation, error: ServiceError?) { endings.append(error) }

    func status(_ evaluation: Evaluation, _ progress: EvaluationProgress) { statuses.append(progress) }
}
