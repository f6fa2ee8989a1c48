import Foundation
@testable import LocalAuthService
import XCTest

/// Where the finger is enough (ContextPolicy/, docs/POLICY.md): the strict
/// file format, the rule that a person tightens and never loosens, and how
/// a call's context follows from what the service can prove.
final class ContextPolicyTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running  // the stores' tests run on the service's actor
    }

    private func parse(_ text: String) -> Result<PolicyFile, PolicyFile.Problem> { PolicyFile.parse(Array(text.utf8)) }

    func testAnEmptyFileAndCommentsLeaveEveryContextOn() throws {
        XCTAssertEqual(try parse("").get(), .allOn)
        XCTAssertEqual(try parse("# nothing here\n\n   \n\t# indented comment\n").get(), .allOn)
    }

    func testEachContextCanBeTurnedOffAndOnByName() throws {
        let policy = try parse("terminal = off\nadmin=off\r\n  apps =   on  \nlock-screen = off\n").get()
        XCTAssertEqual(policy.off, [.terminal, .admin, .lockScreen])
        XCTAssertTrue(policy.allows(.apps))
        XCTAssertTrue(policy.allows(.login))
        XCTAssertTrue(policy.allows(.appSecrets))
        for context in AuthContext.allCases {
            XCTAssertEqual(try parse("\(context.rawValue) = off").get().off, [context], context.rawValue)
        }
    }

    /// Every error names its line and fails: the caller then reads the file as every context off.
    func testAnythingOutsideTheFormatIsAnErrorWithItsLine() {
        let bad: [(String, Int, String)] = [
            ("terminal = off\nsudo = off\n", 2, "unknown context \"sudo\""),
            ("lockscreen = off\n", 1, "unknown context \"lockscreen\""),
            ("terminal = no\n", 1, "terminal must be on or off, not \"no\""),
            ("terminal = OFF\n", 1, "must be on or off"),
            ("terminal = \n", 1, "must be on or off"),
            ("# ok\nterminal off\n", 2, "expected `context = on|off`"),
            ("apps = on\napps = off\n", 2, "apps is set twice"),
            ("Terminal = off\n", 1, "unknown context"),
        ]
        for (text, line, message) in bad {
            guard case .failure(let problem) = parse(text) else { return XCTFail("accepted: \(text)") }
            XCTAssertEqual(problem.line, line, text)
            XCTAssertTrue(problem.message.contains(message), "\(problem.message) ∌ \(message)")
        }
        guard case .failure(let large) = PolicyFile.parse(Array(repeating: UInt8(ascii: "#"), count: PolicyFile.maximumBytes + 1))
        else { return XCTFail("a file past the bound was accepted") }
        XCTAssertEqual(large.line, 0)
        guard case .failure(let binary) = PolicyFile.parse([0x61, 0xff, 0xfe]) else { return XCTFail("bytes that are not UTF-8 were accepted") }
        XCTAssertEqual(binary.line, 0)
    }

    /// The echo of a bad value in the log is bounded and printable.
    func testAnUnknownNameIsEchoedBoundedAndPrintable() {
        guard case .failure(let problem) = parse(String(repeating: "x", count: 500) + "\u{1b}[31m = off") else { return XCTFail() }
        XCTAssertLessThan(problem.message.count, 200)
        XCTAssertFalse(problem.message.contains("\u{1b}"))
    }

    /// What a person's choices are stored as reads back as the same policy.
    func testThePersonsFileReadsBackAsWritten() throws {
        let policy = PolicyFile(off: [.apps, .terminal])
        XCTAssertEqual(try PolicyFile.parse(Array(policy.text.utf8)).get(), policy)
        XCTAssertEqual(try PolicyFile.parse(Array(PolicyFile.allOff.text.utf8)).get(), .allOff)
    }

    /// The rule: a context is on only if the machine and the person both say on.
    func testAPersonTightensTheMachinesPolicyAndNeverLoosensIt() {
        let machine = PolicyFile(off: [.terminal])
        // The person turns apps off: tighter.
        XCTAssertEqual(PolicyFile.effective(machine: machine, person: PolicyFile(off: [.apps])).off, [.terminal, .apps])
        // The person says everything on: the machine's off stays off.
        XCTAssertEqual(PolicyFile.effective(machine: machine, person: .allOn).off, [.terminal])
        XCTAssertFalse(PolicyFile.effective(machine: machine, person: .allOn).allows(.terminal))
        XCTAssertEqual(PolicyFile.effective(machine: .allOff, person: .allOn), .allOff)
        XCTAssertEqual(PolicyFile.effective(machine: .allOn, person: .allOn), .allOn)
    }

    /// The store: a person's choice is kept per uid, "on" only undoes their
    /// own "off", and a damaged file fails closed.
    @ServiceActor
    func testThePersonsStoreKeepsOneFilePerUidAndFailsClosed() async throws {
        let directory = NSTemporaryDirectory() + "context-policy-\(getpid())-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = PersonPolicyStore(directory: directory)
        XCTAssertEqual(store.policy(of: 1000), .allOn, "no file: every context on")
        try store.set(.terminal, on: false, for: 1000)
        XCTAssertEqual(PersonPolicyStore(directory: directory).policy(of: 1000).off, [.terminal], "kept on disk")
        XCTAssertEqual(PersonPolicyStore(directory: directory).policy(of: 1001), .allOn, "another uid is not touched")
        try store.set(.terminal, on: true, for: 1000)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/1000"), "all on again: no file left")
        try Data("terminal = maybe\n".utf8).write(to: URL(fileURLWithPath: directory + "/1002"))
        XCTAssertEqual(PersonPolicyStore(directory: directory).policy(of: 1002), .allOff, "a damaged file fails closed")
    }

    /// The machine's file: missing → every context on; an error → every context off.
    @ServiceActor
    func testTheMachinesFileReadsSafestOnAnErrorAndAgainOnReload() async throws {
        let directory = NSTemporaryDirectory() + "context-policy-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/policy.conf"
        let policy = ContextPolicy(machineFile: file, stateDirectory: directory, identify: { _ in CallerIdentity(app: .unreadable, executable: nil) })
        XCTAssertEqual(policy.machine, .allOn)
        try Data("terminal = off\n".utf8).write(to: URL(fileURLWithPath: file))
        XCTAssertEqual(policy.machine, .allOn, "read at start and on reload only")
        policy.reload()
        XCTAssertEqual(policy.machine.off, [.terminal])
        try Data("terminal = off\nadmn = off\n".utf8).write(to: URL(fileURLWithPath: file))
        policy.reload()
        XCTAssertEqual(policy.machine, .allOff, "a typo: every context off")
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: false)
        policy.reload()
        XCTAssertEqual(policy.machine, .allOff, "unreadable (a directory): every context off")
    }

    /// The program the service proves decides, and a PAM service name can
    /// only add a context: never take the program's away.
    func testAPamCallsContextsFollowTheProvenProgramAndTheServiceName() {
        XCTAssertEqual(AuthContext.ofPAM(service: "sudo", executable: "/usr/bin/sudo"), [.terminal])
        XCTAssertEqual(AuthContext.ofPAM(service: "su", executable: "/usr/bin/su"), [.terminal])
        XCTAssertEqual(AuthContext.ofPAM(service: "polkit-1", executable: "/usr/lib/polkit-1/polkit-agent-helper-1"), [.admin])
        XCTAssertEqual(AuthContext.ofPAM(service: "gdm-password", executable: "/usr/libexec/gdm-session-worker"), [.login])
        XCTAssertEqual(AuthContext.ofPAM(service: "login", executable: "/usr/bin/login"), [.login])
        XCTAssertEqual(AuthContext.ofPAM(service: "xscreensaver", executable: "/usr/libexec/xscreensaver-auth"), [.lockScreen])
        XCTAssertEqual(AuthContext.ofPAM(service: "cups", executable: "/usr/sbin/cupsd"), [.terminal], "any other service")
        XCTAssertEqual(AuthContext.ofPAM(service: nil, executable: nil), [.terminal], "an older module, an unreadable program")
        XCTAssertEqual(AuthContext.ofPAM(service: nil, executable: "/usr/lib/polkit-1/polkit-agent-helper-1"), [.admin])
        // A name that disagrees with the program: both count, so stricter only.
        XCTAssertEqual(AuthContext.ofPAM(service: "gdm-password", executable: "/usr/bin/sudo"), [.terminal, .login])
        XCTAssertEqual(AuthContext.ofPAM(service: "login", executable: "/usr/lib/polkit-1/polkit-agent-helper-1"), [.admin, .login])
    }

    func testAnFprintdClientsContextIsItsProvenProgram() {
        XCTAssertEqual(AuthContext.ofFprintdClient(executable: "/usr/bin/sudo"), .terminal)
        XCTAssertEqual(AuthContext.ofFprintdClient(executable: "/usr/lib/polkit-1/polkit-agent-helper-1"), .admin)
        XCTAssertEqual(AuthContext.ofFprintdClient(executable: "/usr/libexec/gdm-session-worker"), .login)
        XCTAssertEqual(AuthContext.ofFprintdClient(executable: "/usr/bin/swaylock"), .lockScreen)
        XCTAssertEqual(AuthContext.ofFprintdClient(executable: "/usr/bin/fprintd-verify"), .apps)
        XCTAssertEqual(AuthContext.ofFprintdClient(executable: nil), .apps)
    }
}
