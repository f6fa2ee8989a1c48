import Foundation
import DBusCore
@testable import LocalAuthService
import LocalAuthShared

// Fakes for fprintd's seams (Sources/LocalAuthService/Fprintd/FprintdSeams.swift):
// the EvaluatorRig's scripted reader held as an fprintd session, prints in
// memory, the real Evaluator's verify and lockout (the ones LocalAuth uses), and a
// recorder of the signals. No libfprint, no bus.

/// One reader as a Device object shows it.
@ServiceActor
final class FakeFprintdReader: FprintdReader {
    let identity: Readers.Identity
    var supportsIdentify = false
    var storesPrints = false
    let name = "Fake reader"
    var enrollStages = 5
    let scanType = "press"
    private(set) var fingerStatus: (@ServiceActor (Bool, Bool) -> Void)?

    init(_ identity: Readers.Identity) { self.identity = identity }

    func followFingerStatus(_ changed: @escaping @ServiceActor (Bool, Bool) -> Void) { fingerStatus = changed }
}

/// The rig's FakeReader held for one operation; enrollment follows `steps`.
@ServiceActor
final class FakeFprintdSession: ReaderSession {
    enum EnrollStep {
        case stage(Int)
        case retry(RetryKind)
        case fail(GLibError)
        /// Waits for a cancellation (Stop, Release, a timeout).
        case wait
    }

    let reader: FakeReader
    private unowned let seams: FakeFprintdSeams

    init(reader: FakeReader, seams: FakeFprintdSeams) {
        self.reader = reader
        self.seams = seams
    }

    var identity: Readers.Identity { reader.identity }

    func scan(_ gallery: [EnrolledPrint], cancellable: Cancellable) async throws(GLibError) -> ScanOutcome {
        try await reader.scan(gallery, cancellable: cancellable)
    }

    func unusable(_ error: GLibError) -> ServiceError? { reader.unusable(error) }

    func release() { reader.release() }

    func enroll(
        _ finger: FingerName, username: String, cancellable: Cancellable,
        progress: @escaping @ServiceActor (Int, RetryKind?) -> Void
    ) async throws(GLibError) -> any PrintTemplate {
        while !seams.enrollSteps.isEmpty {
            switch seams.enrollSteps.removeFirst() {
            case .stage(let stage): progress(stage, nil)
            case .retry(let kind): progress(0, kind)
            case .fail(let error): throw error
            case .wait:
                while !cancellable.isCancelled { try? await Task.sleep(for: .milliseconds(1)) }
                throw FakeReader.cancelled
            }
        }
        return FakeTemplate()
    }

    func deleteFromChip(_ print: any PrintTemplate) async throws(GLibError) {
        seams.chipDeletes += 1
        if let error = seams.chipError { throw error }
    }

    func chipPrints() async throws(GLibError) -> [GObjectRef] { [] }

    func failure(_ error: GLibError) -> ReaderFailure { reader.failure(error) }
}

/// Everything else a Device object uses, over an EvaluatorRig.
@ServiceActor
final class FakeFprintdSeams: FprintdSeams, ReaderOpener {
    static let full = FakeReader.full

    let rig: EvaluatorRig
    /// Opening fails with this (the rig's reader: the verify opens it too).
    var openError: ServiceError? {
        get { rig.reader.openError }
        set { rig.reader.openError = newValue }
    }
    /// Whether a person can touch the reader (the rig's reader: the verify's check reads it too).
    var reachable: Bool {
        get { rig.reader.reachable }
        set { rig.reader.reachable = newValue }
    }
    /// What a Claim's open throws (another program holds the reader: `readerInUse`).
    var holdError: ServiceError?
    /// Claims' holds of the reader: taken, and given back.
    private(set) var holdsTaken = 0
    private(set) var holdsReleased = 0
    /// Whether a claim keeps the reader open now.
    var held: Bool { holdsTaken > holdsReleased }
    var asleep = false
    var presence: Presence = .local
    var passwordNeededError: ServiceError?
    /// Each user's prints on the reader: the rig's, which the verify reads.
    var stored: [UInt32: [EnrolledPrint]] {
        get { rig.prints.byUser }
        set { rig.prints.byUser = newValue }
    }
    var enrollSteps: [FakeFprintdSession.EnrollStep] = []
    var chipDeletes = 0
    var chipError: GLibError?
    private(set) var saved: [(FingerName, String, UInt32)] = []
    private(set) var changedUsers: [UInt32] = []
    /// Every signal, with its destination.
    private(set) var signals: [(member: String, arguments: [DBusValue], destination: String?)] = []

    /// The real budget, on a directory of this fake's own, counting into the rig's lockout.
    lazy var duplicateChecks = DuplicateCheckBudget(
        stateDirectory: FakeState.directory(), countFailedMatch: { [rig] uid in _ = try? rig.verifier.scanDidNotMatch(uid) })

    init(rig: EvaluatorRig) { self.rig = rig }

    /// The one enroll operation, over this fake's sessions.
    lazy var enrollment = Enrollment(gate: gate, readers: self, duplicateChecks: duplicateChecks, stages: { _ in 5 })
    /// The rig's queue, opening this fake's sessions (enrollments, deletes on the chip).
    lazy var gate = ReaderGate(queue: rig.queue, opener: self, clock: rig.clock)

    func open(_ reader: Readers.Identity, _ opening: ReaderOpening) async throws(ServiceError) -> any ReaderSession {
        _ = try await rig.reader.open(reader, opening)
        return FakeFprintdSession(reader: rig.reader, seams: self)
    }

    func hold(_ reader: Readers.Identity, cancellable: Cancellable) async throws(ServiceError) -> (any FprintdHold)? {
        // An await, as opening a real reader is.
        await Task.yield()
        if asleep { return nil }
        if let holdError { throw holdError }
        holdsTaken += 1
        return FakeHold { [weak self] in self?.holdsReleased += 1 }
    }

    /// ReaderLookup's: a Device names its own reader and never asks which serves a user.
    func reader(for uid: UInt32) -> Readers.Identity? { reachable && !asleep ? rig.reader.identity : nil }
    func isReachable(_ reader: Readers.Identity) -> Bool { reachable && !asleep }
    var noReaderError: ServiceError { asleep ? Interruption.systemSleeping.error : ServiceErrors.noReader }

    func prints(of uid: UInt32, on reader: Readers.Identity) -> [EnrolledPrint] { stored[uid] ?? [] }
    func allPrints(of uid: UInt32, on reader: Readers.Identity) -> [EnrolledPrint] { stored[uid] ?? [] }
    func everyPrint(on reader: Readers.Identity) -> [EnrolledPrint] { stored.values.flatMap { $0 } }

    func save(_ print: any PrintTemplate, finger: FingerName, username: String, uid: UInt32, reader: Readers.Identity) throws {
        saved.append((finger, username, uid))
        enroll(finger, for: uid)
    }

    /// Prints whose removal fails (by location), as a file that cannot be unlinked.
    var unremovable: Set<String> = []

    func remove(_ print: EnrolledPrint) throws {
        if unremovable.contains(print.location) { throw POSIXError(.EISDIR) }
        stored = stored.mapValues { $0.filter { $0.location != print.location } }
    }

    func enroll(_ finger: FingerName, for uid: UInt32) {
        stored[uid, default: []].append(
            EnrolledPrint(
                finger: finger, source: .fprintd, stamp: [1], template: FakeTemplate(),
                location: "\(uid)/\(finger.rawValue)"))
    }

    func presence(of caller: CallerRecord) async -> Presence { presence }
    func passwordNeeded(_ uid: UInt32) -> ServiceError? { passwordNeededError }
    var verifier: Verifier { rig.verifier }
    func userChanged(_ uid: UInt32) { changedUsers.append(uid) }

    func emit(_ member: String, _ arguments: [DBusValue], from path: String, interface: String, to destination: String?) {
        signals.append((member, arguments, destination))
    }

    /// The status signals in order: "VerifyFingerSelected any", "VerifyStatus verify-match done".
    var statuses: [String] {
        signals.compactMap { signal in
            guard signal.member != "PropertiesChanged" else { return nil }
            var words = [signal.member] + signal.arguments.compactMap(\.string)
            if case .boolean(true)? = signal.arguments.last { words.append("done") }
            return words.joined(separator: " ")
        }
    }
}

/// A Claim's hold: counts its one release.
@ServiceActor
final class FakeHold: FprintdHold {
    private var released: (@ServiceActor () -> Void)?
    init(_ released: @escaping @ServiceActor () -> Void) { self.released = released }
    func release() {
        released?()
        released = nil
    }
}

/// A fresh state directory under the test process's temporary directory.
enum FakeState {
    static func directory() -> String {
        let path = NSTemporaryDirectory() + "localauth-fake-state-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
