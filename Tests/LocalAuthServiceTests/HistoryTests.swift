import DBusCore
import Glibc
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The history of approvals (Sources/LocalAuthService/History/): an entry's
/// fields, the outcome of each way a decision ends, journald's native
/// protocol as the service writes it (to a socket the test binds), and the
/// router's hook over its fakes: a decided call is one entry, an undecided
/// one none. Milliseconds, no root, no journald.
final class HistoryTests: XCTestCase {
    typealias Field = LocalAuthHistory.Field

    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    static let vault = HistoryEntry(
        outcome: .granted, context: .app, method: "EvaluatePolicy", program: "/usr/bin/vault", declaredName: "Vault",
        userUID: 1000, callerUID: 1000, reader: "virtual_device/0")

    func testAnEntryHasItsOutcomesMessageIDAndEveryFieldGiven() {
        let fields = Dictionary(uniqueKeysWithValues: Self.vault.fields.map { ($0.name, $0.value) })
        XCTAssertEqual(fields["MESSAGE_ID"], "067d335c13d54715817c74400fabbd95")
        XCTAssertEqual(fields["SYSLOG_IDENTIFIER"], "localauthd")
        XCTAssertEqual(fields[Field.outcome], "granted")
        XCTAssertEqual(fields[Field.context], "app")
        XCTAssertEqual(fields[Field.method], "EvaluatePolicy")
        XCTAssertEqual(fields[Field.program], "/usr/bin/vault")
        XCTAssertEqual(fields[Field.declaredName], "Vault")
        XCTAssertEqual(fields[Field.userUID], "1000")
        XCTAssertEqual(fields[Field.callerUID], "1000")
        XCTAssertEqual(fields[Field.reader], "virtual_device/0")
        XCTAssertNil(fields[Field.pamService], "an absent value is an absent field")
        XCTAssertNil(fields[Field.error])
        XCTAssertEqual(fields["MESSAGE"], "fingerprint of uid 1000 granted for /usr/bin/vault (app, declared \"Vault\")")
    }

    func testEveryOutcomeHasItsOwnFixedMessageID() {
        let ids = LocalAuthHistory.Outcome.allCases.map(\.messageID)
        XCTAssertEqual(Set(ids).count, ids.count)
        for id in ids {
            XCTAssertEqual(id.count, 32)
            XCTAssertTrue(id.allSatisfy { "0123456789abcdef".contains($0) }, id)
        }
        XCTAssertEqual(LocalAuthHistory.Outcome(messageID: "36956ae329cc4697bda8bd2997be5f28"), .refused)
    }

    @ServiceActor
    func testTheOutcomeIsWhyTheCallEndedThenWhatWasThrown() async {
        let outcome = HistoryEntry.outcome
        XCTAssertEqual(outcome(nil, nil), .granted)
        XCTAssertEqual(outcome(ServiceErrors.la(.authenticationFailed, ""), nil), .refused)
        XCTAssertEqual(outcome(ServiceErrors.la(.biometryLockout, ""), nil), .lockedOut)
        XCTAssertEqual(outcome(ServiceError(.notAtTheReader, ""), nil), .notAtTheReader)
        XCTAssertEqual(outcome(ServiceErrors.la(.userCancel, ""), nil), .cancelled)
        XCTAssertEqual(outcome(ServiceErrors.la(.biometryNotEnrolled, ""), nil), .unavailable)
        XCTAssertEqual(outcome(ServiceError(.readerCoolingDown, ""), nil), .unavailable)
        // SystemCancel says little: the interruption tells a timeout from a cancel.
        let cancelled = ServiceErrors.la(.systemCancel, "")
        XCTAssertEqual(outcome(cancelled, .timedOut), .timedOut)
        XCTAssertEqual(outcome(cancelled, .queueTimedOut), .timedOut)
        XCTAssertEqual(outcome(cancelled, .systemSleeping), .cancelled)
        XCTAssertEqual(outcome(ServiceErrors.la(.appCancel, ""), .appCancelled), .cancelled)
        XCTAssertEqual(outcome(ServiceError(.notAtTheReader, ""), .notAtTheReader), .notAtTheReader)
        XCTAssertEqual(outcome(nil, .superseded), .granted, "policy 2's password won: granted")
    }

    @ServiceActor
    func testFprintdsUnjudgedVerifyIsATimeoutOnlyWhenItsOwnTimerEndedIt() async {
        let outcome = ApprovalHistory.fprintdOutcome
        XCTAssertEqual(outcome(.interrupted, nil, true).0, .timedOut)
        XCTAssertEqual(outcome(.interrupted, nil, false).0, .cancelled, "VerifyStop")
        XCTAssertEqual(outcome(.refused(ServiceErrors.la(.biometryLockout, "locked")), nil, false).0, .lockedOut)
        XCTAssertEqual(outcome(.refused(ServiceError(.notAtTheReader, "away")), nil, false).0, .notAtTheReader)
        XCTAssertEqual(outcome(.interrupted, .notAtTheReader, false).0, .notAtTheReader)
        XCTAssertEqual(outcome(.notRecorded, nil, false).0, .unavailable)
    }

    func testAPAMServiceGivesItsContext() throws {
        XCTAssertEqual(LocalAuthHistory.pamContext(service: "sudo"), .pam)
        XCTAssertEqual(LocalAuthHistory.pamContext(service: "polkit-1"), .polkit)
        XCTAssertEqual(LocalAuthHistory.pamContext(service: "gdm-password"), .login)
        XCTAssertEqual(LocalAuthHistory.pamContext(service: nil), .pam)
        // VerifyUser's option, read once for the history and the context policy.
        func pamService(_ options: DBusValue) throws -> String? { try VerifyUserArguments([.string("root"), options]).pamService }
        XCTAssertEqual(try pamService(.dictionary(["pam-service": .string("sudo")])), "sudo")
        XCTAssertNil(try pamService(.dictionary([:])))
        for bad in [DBusValue.uint32(1), .string(""), .string(String(repeating: "s", count: 65))] {
            XCTAssertThrowsError(try pamService(.dictionary(["pam-service": bad]))) {
                XCTAssertEqual(($0 as? ServiceError)?.kind, .invalidArgs)
            }
        }
    }

    /// A value a caller chose (the declared name) cannot add a field: a
    /// newline sends it in the binary form, which the journal reads as one value.
    func testAValueWithANewlineTravelsWhole() {
        var entry = Self.vault
        entry.declaredName = "Vault\nLOCALAUTH_OUTCOME=granted\nMESSAGE_ID=00"
        let fields = Self.parse(entry.datagram)
        XCTAssertEqual(fields.filter { $0.0 == Field.outcome }.count, 1)
        XCTAssertEqual(fields.filter { $0.0 == "MESSAGE_ID" }.map(\.1), [LocalAuthHistory.Outcome.granted.messageID])
        XCTAssertEqual(fields.first { $0.0 == Field.declaredName }?.1, "Vault\nLOCALAUTH_OUTCOME=granted\nMESSAGE_ID=00")
        XCTAssertEqual(fields.count, entry.fields.count)
        XCTAssertFalse(entry.stderrLine.contains("\n"), "the stderr line stays one line")
        XCTAssertTrue(entry.stderrLine.contains(#"LOCALAUTH_DECLARED_NAME="Vault\nLOCALAUTH_OUTCOME=granted\nMESSAGE_ID=00""#))
    }

    @ServiceActor
    func testTheWriterSendsOneDatagramToJournaldsSocketAndFallsBackWithoutOne() async throws {
        let sink = try DatagramSink()
        XCTAssertTrue(JournalWriter(socketPath: sink.path).send(Self.vault.datagram))
        XCTAssertEqual(sink.receive(), Self.vault.datagram)
        XCTAssertFalse(JournalWriter(socketPath: sink.path + ".absent").send(Self.vault.datagram))
    }

    // MARK: The router's hook

    @ServiceActor
    final class Service {}

    @ServiceActor
    static let localAuth = BusContract<Service>(
        interface: LocalAuthBus.interface,
        methods: [
            "EvaluatePolicy": MethodSpec(
                signature: "usa{sv}", authorization: Authorization(actions: ["evaluate"], interactive: false, anotherUser: .instead("manage")),
                EvaluatePolicyArguments.self
            ) { _, call throws(ServiceError) in
                if call.arguments.reason == "fail" { throw ServiceErrors.la(.authenticationFailed, "no match") }
                return [.boolean(true)]
            },
            "CanEvaluatePolicy": MethodSpec(
                signature: "u", authorization: .none, CanEvaluatePolicyArguments.self
            ) { _, _ throws(ServiceError) in [.boolean(true)] },
        ],
        errors: .localAuth, introspection: "<node/>", properties: nil,
        refusal: { _, _ in ServiceErrors.permissionDenied("polkit said no") }, answers: ApprovalHistory.watch)

    @ServiceActor
    func testTheRouterRecordsADecidedCallAndNothingElse() async throws {
        let sink = try DatagramSink()
        ApprovalHistory.current = ApprovalHistory(
            identity: { _ in CallerIdentity(app: .sandboxed("flatpak:org.example.Vault"), executable: "/app/bin/vault") },
            reader: { _ in Readers.Identity(driver: "virtual_device", deviceID: "0") },
            writer: JournalWriter(socketPath: sink.path))
        defer { ApprovalHistory.current = nil }
        let rig = RouterRig()
        let service = Service()
        rig.callers.uids[":1.7"] = 1000
        rig.polkit.verdicts["evaluate"] = .authorized
        let options = DBusValue.dictionary(["app-name": .string("Totally Bitwarden")])
        let refused = FakeWireCall("EvaluatePolicy", "usa{sv}", [.uint32(1), .string("fail"), options])
        await rig.send(refused, Self.localAuth, service)
        XCTAssertEqual(refused.answers, [.error("org.example.LocalAuth.Error.AuthenticationFailed")])
        let fields = Dictionary(Self.parse(try XCTUnwrap(sink.receive())), uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(fields["MESSAGE_ID"], LocalAuthHistory.Outcome.refused.messageID)
        XCTAssertEqual(fields[Field.program], "flatpak:org.example.Vault", "the proven program, not the declared name")
        XCTAssertEqual(fields[Field.declaredName], "Totally Bitwarden")
        XCTAssertEqual(fields[Field.context], "app")
        XCTAssertEqual(fields[Field.userUID], "1000")
        XCTAssertEqual(fields[Field.callerUID], "1000")
        XCTAssertEqual(fields[Field.reader], "virtual_device/0")
        XCTAssertEqual(fields[Field.error], "org.example.LocalAuth.Error.AuthenticationFailed")

        let granted = FakeWireCall("EvaluatePolicy", "usa{sv}", [.uint32(1), .string("ok"), .dictionary([:])])
        await rig.send(granted, Self.localAuth, service)
        let next = Dictionary(Self.parse(try XCTUnwrap(sink.receive())), uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(next["MESSAGE_ID"], LocalAuthHistory.Outcome.granted.messageID)
        XCTAssertNil(next[Field.error])

        // A preflight decides nothing; polkit's no never reached a finger.
        await rig.send(FakeWireCall("CanEvaluatePolicy", "u", [.uint32(1)]), Self.localAuth, service)
        rig.polkit.verdicts["evaluate"] = nil
        await rig.send(FakeWireCall("EvaluatePolicy", "usa{sv}", [.uint32(1), .string("ok"), .dictionary([:])]), Self.localAuth, service)
        XCTAssertNil(sink.receive(), "no entry for a call that decided nothing about a finger")
    }

    // MARK: Helpers

    /// journald's native protocol, read back as journald reads it.
    static func parse(_ bytes: [UInt8]) -> [(String, String)] {
        var fields: [(String, String)] = []
        var rest = bytes[...]
        while let end = rest.firstIndex(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "=") }) {
            let name = String(decoding: rest[..<end], as: UTF8.self)
            if rest[end] == UInt8(ascii: "=") {
                let valueEnd = rest[end...].firstIndex(of: UInt8(ascii: "\n")) ?? rest.endIndex
                fields.append((name, String(decoding: rest[(end + 1)..<valueEnd], as: UTF8.self)))
                rest = rest[min(valueEnd + 1, rest.endIndex)...]
            } else {
                let lengthBytes = rest[(end + 1)..<(end + 9)]
                let length = lengthBytes.reversed().reduce(0) { $0 << 8 | Int($1) }
                let start = end + 9
                fields.append((name, String(decoding: rest[start..<(start + length)], as: UTF8.self)))
                rest = rest[(start + length + 1)...]
            }
        }
        return fields
    }
}

/// A datagram socket bound in a temporary directory: journald's socket, as a test holds it.
final class DatagramSink {
    let path: String
    private let socket: Int32

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/history-XXXXXX").utf8CString)
        guard let directory = mkdtemp(&template) else { throw POSIXError(.EIO) }
        path = String(cString: directory) + "/socket"
        socket = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
    }

    deinit {
        close(socket)
        unlink(path)
        rmdir(String(path.dropLast("/socket".count)))
    }

    /// The next datagram, or nil if none is waiting (the writer sends before it returns).
    func receive() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return count < 0 ? nil : Array(buffer.prefix(count))
    }
}
