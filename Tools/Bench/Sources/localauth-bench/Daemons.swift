import RigSupport
import DBusCore
import Foundation
import LocalAuthShared
import Synchronization

/// A queue of values from signal handlers (on a loop thread) to one waiting task.
final class Mailbox<Value: Sendable>: Sendable {
    private struct State: ~Copyable {
        var items: [Value] = []
        var waiter: CheckedContinuation<Value?, Never>?
        var generation: UInt64 = 0
    }
    private let state = Mutex(State())

    func put(_ value: Value) {
        let waiter = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.items.append(value)
            return nil
        }
        waiter?.resume(returning: value)
    }

    /// The next value, or nil after `timeout` seconds.
    func take(timeout: Double) async -> Value? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            let outcome = state.withLock { state -> (Value?, UInt64?) in
                if !state.items.isEmpty { return (state.items.removeFirst(), nil) }
                state.generation += 1
                state.waiter = continuation
                return (nil, state.generation)
            }
            guard let token = outcome.1 else {
                continuation.resume(returning: outcome.0)
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
                let expired = self.state.withLock { state -> CheckedContinuation<Value?, Never>? in
                    guard state.generation == token, let waiter = state.waiter else { return nil }
                    state.waiter = nil
                    return waiter
                }
                expired?.resume(returning: nil)
            }
        }
    }

    func drain() { state.withLock { $0.items.removeAll() } }
}

/// Runs `body` on a thread of its own (for blocking calls, which must not
/// occupy Swift's cooperative threads).
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}

/// The finger both daemons enroll and every evaluation scans.
let benchFinger = "right-index-finger"
let benchScanID = "localauth-bench-finger"
let callTimeout = 10.0

/// Our service, driven as an app would: `CanEvaluatePolicy` is a blocking
/// call (LAContext.canEvaluatePolicy is synchronous), EvaluatePolicy async.
enum OurService {
    static let name = LocalAuthBus.serviceName
    static let path = ObjectPath(stringLiteral: LocalAuthBus.objectPath)
    static let interface = LocalAuthBus.interface

    static func preflightBlocking(_ bus: BusConnection) throws {
        let reply = try bus.callBlocking(destination: name, path: path, interface: interface,
                                         member: LocalAuthBus.Method.canEvaluatePolicy,
                                         arguments: [.uint32(PolicyValue.deviceOwnerAuthenticationWithBiometrics.rawValue)],
                                         timeout: callTimeout)
        guard reply.first?.bool == true else { throw BenchError("CanEvaluatePolicy answered \(reply)") }
    }

    static func preflight(_ bus: BusConnection) async throws {
        let reply = try await bus.call(destination: name, path: path, interface: interface,
                                       member: LocalAuthBus.Method.canEvaluatePolicy,
                                       arguments: [.uint32(PolicyValue.deviceOwnerAuthenticationWithBiometrics.rawValue)],
                                       timeout: callTimeout)
        guard reply.first?.bool == true else { throw BenchError("CanEvaluatePolicy answered \(reply)") }
    }

    /// org.freedesktop.DBus.Peer.Ping to the service: libdbus answers it
    /// inside its dispatch, before any of our code runs. The floor.
    static func pingBlocking(_ bus: BusConnection) throws {
        _ = try bus.callBlocking(destination: name, path: path, interface: "org.freedesktop.DBus.Peer",
                                 member: "Ping", timeout: callTimeout)
    }

    /// One whole evaluation; the SCAN goes to the sensor right after the call.
    static func evaluate(_ bus: BusConnection, sensor: VirtualSensor, scanID: String = benchScanID) async throws {
        let arguments: [DBusValue] = [.uint32(PolicyValue.deviceOwnerAuthenticationWithBiometrics.rawValue),
                                      .string("localauth-bench"), .dictionary([:])]
        async let reply = bus.call(destination: name, path: path, interface: interface,
                                   member: LocalAuthBus.Method.evaluatePolicy, arguments: arguments,
                                   timeout: callTimeout)
        try sensor.send("SCAN \(scanID)", acknowledged: false)
        let values = try await reply
        guard values.first?.bool == true else { throw BenchError("EvaluatePolicy answered \(values)") }
    }

    /// Our EvaluationStatus signals (unicast to `bus`), for `evaluateWhenAsked`.
    static func statuses(_ bus: BusConnection) async throws -> Mailbox<String> {
        let box = Mailbox<String>()
        try await bus.followOwner(of: name)
        _ = bus.subscribeUnicast(sender: name, interface: interface, member: LocalAuthBus.Signal.evaluationStatus) { message in
            if let status = message.arguments.last?.string { box.put(status) }
        }
        return box
    }

    /// One whole evaluation whose reader is closed at the start: the finger
    /// comes once the service asks for it ("place-finger": the reader is
    /// open and scanning), as a person's does, so that the sensor's socket
    /// is listening when the scan is sent (no client-side connect retries
    /// inflate the time of the open).
    static func evaluateWhenAsked(_ bus: BusConnection, sensor: VirtualSensor, statuses: Mailbox<String>) async throws {
        statuses.drain()
        let arguments: [DBusValue] = [.uint32(PolicyValue.deviceOwnerAuthenticationWithBiometrics.rawValue),
                                      .string("localauth-bench"), .dictionary([:])]
        async let reply = bus.call(destination: name, path: path, interface: interface,
                                   member: LocalAuthBus.Method.evaluatePolicy, arguments: arguments,
                                   timeout: callTimeout)
        guard let status = await statuses.take(timeout: callTimeout), status == EvaluationProgress.placeFinger.rawValue else {
            throw BenchError("no place-finger status from localauthd")
        }
        try sensor.send("SCAN \(benchScanID)", acknowledged: false)
        let values = try await reply
        guard values.first?.bool == true else { throw BenchError("EvaluatePolicy answered \(values)") }
    }

    static func enroll(_ bus: BusConnection, sensor: VirtualSensor) async throws {
        async let reply = bus.call(destination: name, path: path, interface: interface,
                                   member: LocalAuthBus.Method.enroll, arguments: [.string(benchFinger)],
                                   timeout: 30)
        for _ in 0..<5 {
            try await Task.sleep(for: .milliseconds(30))
            try sensor.send("SCAN \(benchScanID)", acknowledged: true)
        }
        _ = try await reply
    }
}

/// Debian's fprintd (net.reactivated.Fprint), driven with the same calls.
/// Claim is tied to the connection, so each cycle runs on one connection.
enum Fprintd {
    static let name = "net.reactivated.Fprint"
    static let managerPath: ObjectPath = "/net/reactivated/Fprint/Manager"
    static let managerInterface = "net.reactivated.Fprint.Manager"
    static let deviceInterface = "net.reactivated.Fprint.Device"

    /// A connection to fprintd with its VerifyStatus/EnrollStatus signals collected.
    final class Client: Sendable {
        let bus: BusConnection
        let statuses = Mailbox<(member: String, result: String, done: Bool)>()

        init(bus: BusConnection) async throws {
            self.bus = bus
            // Signals from a well-known name are believed only from its owner.
            try await bus.followOwner(of: Fprintd.name)
            for member in ["VerifyStatus", "EnrollStatus"] {
                try await bus.subscribe(sender: Fprintd.name, interface: Fprintd.deviceInterface, member: member) {
                    [statuses] message in
                    let arguments = message.arguments
                    guard arguments.count == 2, let result = arguments[0].string, let done = arguments[1].bool else { return }
                    statuses.put((member, result, done))
                }
            }
        }
    }

    static func defaultDevice(_ bus: BusConnection) async throws -> ObjectPath {
        let reply = try await bus.call(destination: name, path: managerPath, interface: managerInterface,
                                       member: "GetDefaultDevice", timeout: callTimeout)
        guard case .objectPath(let device)? = reply.first else { throw BenchError("GetDefaultDevice answered \(reply)") }
        return device
    }

    static func preflightBlocking(_ bus: BusConnection) throws {
        let reply = try bus.callBlocking(destination: name, path: managerPath, interface: managerInterface,
                                         member: "GetDefaultDevice", timeout: callTimeout)
        guard case .objectPath(let device)? = reply.first else { throw BenchError("GetDefaultDevice answered \(reply)") }
        let fingers = try bus.callBlocking(destination: name, path: device, interface: deviceInterface,
                                           member: "ListEnrolledFingers", arguments: [.string("")], timeout: callTimeout)
        guard fingers.first?.stringArray?.contains(benchFinger) == true else {
            throw BenchError("ListEnrolledFingers answered \(fingers)")
        }
    }

    static func preflight(_ bus: BusConnection) async throws {
        let device = try await defaultDevice(bus)
        let fingers = try await bus.call(destination: name, path: device, interface: deviceInterface,
                                         member: "ListEnrolledFingers", arguments: [.string("")], timeout: callTimeout)
        guard fingers.first?.stringArray?.contains(benchFinger) == true else {
            throw BenchError("ListEnrolledFingers answered \(fingers)")
        }
    }

    private static func device(_ client: Client, _ device: ObjectPath, _ member: String,
                               _ arguments: [DBusValue] = []) async throws {
        _ = try await client.bus.call(destination: name, path: device, interface: deviceInterface,
                                      member: member, arguments: arguments, timeout: callTimeout)
    }

    /// Claim + VerifyStart + VerifyStatus + VerifyStop + Release; the SCAN goes
    /// to the sensor right after VerifyStart is sent.
    static func evaluate(_ client: Client, device path: ObjectPath, sensor: VirtualSensor) async throws {
        try await device(client, path, "Claim", [.string("")])
        do {
            async let started: Void = device(client, path, "VerifyStart", [.string("any")])
            try sensor.send("SCAN \(benchScanID)", acknowledged: false)
            try await started
            guard let status = await client.statuses.take(timeout: callTimeout) else {
                throw BenchError("no VerifyStatus from fprintd")
            }
            try await device(client, path, "VerifyStop")
            guard status.member == "VerifyStatus", status.result == "verify-match", status.done else {
                throw BenchError("fprintd: \(status.member) \(status.result)")
            }
        } catch {
            try? await device(client, path, "Release")
            throw error
        }
        try await device(client, path, "Release")
    }

    static func enroll(_ client: Client, device path: ObjectPath, sensor: VirtualSensor) async throws {
        try await device(client, path, "Claim", [.string("")])
        do {
            client.statuses.drain()
            try await device(client, path, "EnrollStart", [.string(benchFinger)])
            for _ in 0..<5 {
                try await Task.sleep(for: .milliseconds(30))
                try sensor.send("SCAN \(benchScanID)", acknowledged: true)
            }
            while true {
                guard let status = await client.statuses.take(timeout: 10) else { throw BenchError("fprintd enrollment stalled") }
                if status.done {
                    guard status.result == "enroll-completed" else { throw BenchError("fprintd enrollment: \(status.result)") }
                    break
                }
            }
            try await device(client, path, "EnrollStop")
        } catch {
            try? await device(client, path, "Release")
            throw error
        }
        try await device(client, path, "Release")
    }
}
