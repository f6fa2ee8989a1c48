import DBusCore
import Foundation
import XCTest

/// A private `dbus-daemon --session` on a unix socket in a fresh directory,
/// stopped (by its pid) and removed by `stop()`.
final class PrivateBus {
    let address: String
    private let process: Process
    private let directory: URL

    init() throws {
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("dbuscore-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--nofork", "--print-address=1",
                             "--address=unix:path=\(directory.path)/bus"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // The daemon prints its address once it listens.
        var data = Data()
        while !data.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            data.append(chunk)
        }
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        guard line.hasPrefix("unix:") else {
            if process.isRunning {
                kill(process.processIdentifier, SIGTERM)
                process.waitUntilExit()
            }
            try? FileManager.default.removeItem(at: directory)
            throw DBusError(.noServer, "dbus-daemon printed no address: \(line)")
        }
        address = line
    }

    var isRunning: Bool { process.isRunning }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A private bus with two connections on two loops: `server` exports
/// `/test/Echo`, `client` calls it.
final class BusFixture {
    static let interface = "org.example.Test"
    static let echoPath: ObjectPath = "/test/Echo"
    /// The echo object's bound on call bodies (ExportBoundsTests).
    static let echoBodyLimit = 1 << 20
    static let customError = DBusError.Name(rawValue: "org.example.Test.Error.Custom")

    let bus: PrivateBus
    let serverLoop: EventLoop
    let clientLoop: EventLoop
    let server: BusConnection
    let client: BusConnection

    init() throws {
        bus = try PrivateBus()
        serverLoop = EventLoop.startThread(name: "test-server-loop")
        clientLoop = EventLoop.startThread(name: "test-client-loop")
        do {
            server = try BusConnection.connect(to: .address(bus.address), loop: serverLoop)
            client = try BusConnection.connect(to: .address(bus.address), loop: clientLoop)
        } catch {
            serverLoop.stop()
            clientLoop.stop()
            bus.stop()
            throw error
        }
        let serverLoop = self.serverLoop
        server.export(Self.echoPath, maximumBodyBytes: Self.echoBodyLimit) { call in
            switch call.member {
            case "Echo":
                call.reply(call.arguments)
            case "Fail":
                call.fail(DBusError(Self.customError, "custom failure: \(call.arguments.first?.string ?? "")"))
            case "Never":
                break   // never replies
            case "WhoAmI":
                call.reply([.string(call.sender), .string(call.path), .string(call.interface ?? ""),
                            .string(call.member), .string(call.signature), .boolean(serverLoop.isCurrent)])
            default:
                call.fail(DBusError(.unknownMethod, "no method \(call.member)"))
            }
        }
    }

    func tearDown() {
        client.close()
        server.close()
        clientLoop.stop()
        serverLoop.stop()
        bus.stop()
    }

    /// A method call as the server received it from the bus (so it has a
    /// serial and a sender), carrying `arguments`.
    func receivedCall(arguments: [DBusValue]) async throws -> Message {
        let (stream, continuation) = AsyncStream<Message>.makeStream()
        server.export("/test/Capture", maximumBodyBytes: .max) { call in
            continuation.yield(call.message)
            call.reply()
        }
        _ = try await client.call(destination: server.uniqueName, path: "/test/Capture",
                                  interface: Self.interface, member: "Capture", arguments: arguments)
        guard let message = await firstElement(of: stream, within: 5) else {
            throw DBusError(.timeout, "the server saw no call")
        }
        return message
    }
}

/// The first element `stream` yields within `seconds`, or nil.
func firstElement<T: Sendable>(of stream: AsyncStream<T>, within seconds: Double) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        group.addTask {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// Runs one test of this same test binary in a child process, so that a test
/// can observe an operation that may abort the process (libdbus aborts on
/// arguments it considers a programming error).
enum ChildProbe {
    static let variable = "DBUSCORE_TEST_PROBE"

    struct Outcome {
        var exitStatus: Int32
        var crashed: Bool
        /// What the probe printed after `PROBE-OUTCOME: `, if it got that far.
        var outcome: String?
        var output: String
    }

    static func run(_ probe: String, test: String) throws -> Outcome {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [test]
        var environment = ProcessInfo.processInfo.environment
        environment[variable] = probe
        environment["SWIFT_BACKTRACE"] = "enable=no"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        let outcome = text.split(separator: "\n").first { $0.hasPrefix("PROBE-OUTCOME: ") }
            .map { String($0.dropFirst("PROBE-OUTCOME: ".count)) }
        return Outcome(exitStatus: process.terminationStatus,
                       crashed: process.terminationReason == .uncaughtSignal,
                       outcome: outcome, output: text)
    }

    /// In the child: reports what `body` did.
    static func report(_ body: () throws(DBusError) -> String) {
        let line: String
        do {
            line = "returned " + (try body())
        } catch {
            line = "threw " + error.name.rawValue
        }
        FileHandle.standardOutput.write(Data("\nPROBE-OUTCOME: \(line)\n".utf8))
    }
}
