import Foundation
import LocalAuthentication
import RigSupport
import XCTest
import Glibc

/// The one bus rig of this test process. One, because libdbus reads
/// DBUS_SYSTEM_BUS_ADDRESS once per process: the client library in this
/// process stays on the first rig's bus. Stopped when the process exits.
let processRig: BusRig = {
    do {
        let rig = try BusRig()
        atexit { processRig.stop() }
        return rig
    } catch {
        fatalError("cannot start the test rig: \(error)")
    }
}()

/// Base class: the process's bus rig, one fresh service per test.
class RigTestCase: XCTestCase, @unchecked Sendable {
    var rig: BusRig { processRig }
    var service: ServiceProcess!

    override func setUpWithError() throws {
        try super.setUpWithError()
        try rig.revivePolkit()
        for action in ["org.example.LocalAuth.evaluate", "org.example.LocalAuth.enroll"] { try rig.polkit(action, nil) }
        service = try ServiceProcess(bus: rig)
    }

    override func tearDown() {
        FingerRequests.takeOver(nil)
        if let service {
            service.stop()
            if testRun?.hasSucceeded == false { print("localauthd log:\n\(service.log)") }
        }
        // A failed test says whether polkitd died during it (revive-polkit
        // prints a line when it had to start it again): its checks then
        // fail as ServiceUnknown, which reads like a bug of the service.
        if testRun?.hasSucceeded == false { try? rig.revivePolkit() }
        service = nil
        super.tearDown()
    }

    // MARK: Tools

    /// busctl on the rig's bus.
    func busctl(_ arguments: [String], timeout: Double = 60, asNobody: Bool = false) throws -> Outcome {
        let busctlArguments = ["--address=\(rig.address)"] + arguments
        if asNobody {
            return try runProgram("/usr/bin/setpriv", Self.dropTo(65534) + ["/usr/bin/busctl"] + busctlArguments,
                           timeout: timeout)
        }
        return try runProgram("/usr/bin/busctl", busctlArguments, timeout: timeout)
    }

    /// A call to our object with busctl.
    func callService(_ member: String, _ signature: String, _ values: [String] = [], asNobody: Bool = false,
                     timeout: Double = 60) throws -> Outcome {
        var arguments = ["call", "org.example.LocalAuth", "/org/example/LocalAuth", "org.example.LocalAuth", member]
        if !signature.isEmpty { arguments += [signature] + values }
        return try busctl(arguments, timeout: timeout, asNobody: asNobody)
    }

    /// gdbus prints the D-Bus error *name*, which busctl does not.
    func gdbus(_ member: String, _ values: [String], asNobody: Bool = false) throws -> Outcome {
        let arguments = ["call", "--system", "--dest", "org.example.LocalAuth", "--object-path", "/org/example/LocalAuth",
                         "--method", "org.example.LocalAuth.\(member)"] + values
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": rig.address]
        if asNobody {
            return try runProgram("/usr/bin/setpriv", Self.dropTo(65534) + ["/usr/bin/gdbus"] + arguments,
                           environment: environment)
        }
        return try runProgram("/usr/bin/gdbus", arguments, environment: environment)
    }

    /// Enrolls `finger` for root through the client library, presenting `id`
    /// each time the service asks for the next enroll stage.
    func enroll(_ finger: String = "right-index-finger", as id: String = "owner-finger") async throws {
        let feeder = present(id, times: 5)
        try await LAFingerprints.enroll(finger)
        try await feeder.value
    }

    /// Starts an evaluation through the library and returns once it holds the
    /// reader: its first status ("place your finger") arrived.
    func startEvaluation(_ context: LAContext = LAContext()) async throws -> Task<Result<Bool, LAError>, Never> {
        let updates = Collected<LAEvaluationStatus>()
        context.evaluationStatusHandler = { updates.append($0) }
        let pending = Task { await self.evaluate(context: context) }
        try await updates.wait(count: 1)
        return pending
    }

    /// Runs `program` as `uid` (setpriv: no groups) on the rig's bus, to completion.
    func runAs(_ uid: UInt32, _ program: String, _ arguments: [String], timeout: Double = 60) throws -> Outcome {
        try runProgram("/usr/bin/setpriv", Self.dropTo(uid) + [program] + arguments,
                       environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], timeout: timeout)
    }

    /// Starts `program` as `uid` on the rig's bus; its output goes to `output`.
    func startAs(_ uid: UInt32, _ program: String, _ arguments: [String], output: String) throws -> Child {
        try Child("/usr/bin/setpriv", Self.dropTo(uid) + [program] + arguments,
                  environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], stdoutPath: output, stderrPath: output)
    }

    /// setpriv's arguments that make a program run as `uid`, with no groups.
    static func dropTo(_ uid: UInt32) -> [String] { ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"] }

    /// A copy of a test helper from Tests/Helpers that any uid can run.
    func testScript(_ name: String) throws -> String {
        let copy = rig.directory + "/" + name
        if !FileManager.default.fileExists(atPath: copy) {
            try FileManager.default.copyItem(atPath: Paths.helper(name), toPath: copy)
            chmod(copy, 0o755)
        }
        return copy
    }

    /// Waits until the file at `path` contains `text`.
    func waitForText(_ text: String, in path: String, timeout: Double = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !readText(path).contains(text) {
            guard Date() < deadline else { throw RigError("waited \(timeout) s for '\(text)' in \(path): \(readText(path))") }
            usleep(20_000)
        }
    }

    /// Waits until `condition` holds (polling every 20 ms): for state a test
    /// can observe, instead of a fixed sleep.
    func waitUntil(_ what: String, timeout: Double = 10, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() {
            guard Date() < deadline else { throw RigError("waited \(timeout) s until \(what)") }
            usleep(20_000)
        }
    }

    /// Evaluates through the library; the LAError code on failure.
    func evaluate(_ policy: LAPolicy = .deviceOwnerAuthenticationWithBiometrics, reason: String = "Unlock the test",
                  context: LAContext = LAContext()) async -> Result<Bool, LAError> {
        do {
            return .success(try await context.evaluatePolicy(policy, localizedReason: reason))
        } catch let error as LAError {
            return .failure(error)
        } catch {
            return .failure(LAError(.systemCancel, message: "unexpected error \(error)"))
        }
    }
}

extension Result where Success == Bool, Failure == LAError {
    var code: LAError.Code? {
        switch self {
        case .failure(let error): error.code
        case .success: nil
        }
    }
    var succeeded: Bool {
        switch self {
        case .success(let value): value
        case .failure: false
        }
    }
}

/// Values collected from callbacks on other threads, awaited by count.
final class Collected<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Value] = []

    func append(_ value: Value) { lock.withLock { stored.append(value) } }
    var values: [Value] { lock.withLock { stored } }

    func wait(count: Int, timeout: Double = 10) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while values.count < count {
            guard Date() < deadline else { throw RigError("waited \(timeout) s for \(count) value(s), got \(values)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
