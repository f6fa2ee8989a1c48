import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// One Evaluator over fakes, with a scratch state directory.
@ServiceActor
final class EvaluatorRig {
    let uid: UInt32 = 1000
    let sender = ":1.42"
    let reader = FakeReader()
    let prints = FakePrints()
    let environment = FakeEnvironment()
    let password = FakeOwnerPassword()
    let observers = FakeObservers()
    let clock = FakeClock()
    let queue = SensorQueue()
    /// The queue and the fake reader, as the Verifier holds a reader.
    let gate: ReaderGate
    let registry = CallRegistry()
    let state: String
    let evaluator: Evaluator
    /// The Evaluator's verifier: the lockout, the last finger, the fairness.
    var verifier: Verifier { evaluator.verifier }
    /// Evaluations started by `evaluate` that have ended.
    private(set) var finished = 0

    init(attempts: Int = 3) throws {
        state = FileManager.default.temporaryDirectory.appendingPathComponent("evaluator-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let configuration = Configuration(stateDirectory: state, scanTimeout: 30, attemptsPerEvaluation: attempts)
        gate = ReaderGate(queue: queue, opener: reader, clock: clock)
        let verifier = Verifier(
            stateDirectory: state, gate: gate, readers: reader, prints: prints, environment: environment, clock: clock)
        evaluator = Evaluator(
            configuration: configuration, registry: registry, verifier: verifier, ownerPassword: password,
            observers: observers)
    }

    deinit { try? FileManager.default.removeItem(atPath: state) }

    var lockoutFile: String? { try? String(contentsOfFile: state + "/lockout/\(uid)", encoding: .utf8) }

    var queueIsFree: Bool {
        if case .free = queue.state { return true }
        return false
    }

    /// A call registered as the service registers one, for Cancel to find.
    func caller(requestID: String, uid: UInt32? = nil, sender: String? = nil) -> Request {
        let sender = sender ?? self.sender
        let record = CallRecord(sender: sender, requestID: requestID, errors: .localAuth)
        try? registry.register(record)
        return Request(
            caller: CallerRecord(
                sender: sender, uid: uid ?? self.uid, process: nil,
                securityLabel: nil),
            record: record)
    }

    /// Starts an evaluation; its value is the error it ended with, nil for true.
    func evaluate(
        _ policy: PolicyValue = .deviceOwnerAuthenticationWithBiometrics, reuse: Double = 0,
        requestID: String = "r", sender: String? = nil
    ) -> Task<ServiceError?, Never> {
        let caller = caller(requestID: requestID, sender: sender)
        var options = EvaluationOptions()
        options.requestID = requestID
        options.reuseDuration = reuse
        return Task { @ServiceActor in
            defer {
                self.registry.remove(caller.record)
                self.finished += 1
            }
            do throws(ServiceError) {
                try await self.evaluator.evaluate(caller, policy: policy, reason: "Unlock the test", options: options)
                return nil
            } catch {
                return error
            }
        }
    }

    func assertPreflight(
        _ policy: PolicyValue, fails code: LocalAuthErrorCode?, name: String? = nil,
        line: UInt = #line
    ) async {
        let caller = caller(requestID: "preflight")
        defer { registry.remove(caller.record) }
        do throws(ServiceError) {
            try await evaluator.canEvaluate(policy, caller)
            XCTAssertNil(code ?? name.map { _ in .authenticationFailed }, "preflight passed", line: line)
        } catch {
            XCTAssertEqual(error.localAuthName, name ?? code?.dbusName, line: line)
        }
    }

    /// Waits (at most a second) until `condition` holds.
    func waitUntil(_ condition: @ServiceActor () -> Bool, line: UInt = #line) async throws {
        for _ in 0..<1000 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(1))
        }
        XCTFail("waited a second", line: line)
        throw CancellationError()  // the test stops here rather than await what never comes
    }
}
