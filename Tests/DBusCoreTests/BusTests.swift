import XCTest
import DBusCore
import Foundation

/// Two real connections through a private dbus-daemon.
final class BusTests: XCTestCase {
    private var fixture: BusFixture!
    private var server: BusConnection { fixture.server }
    private var client: BusConnection { fixture.client }
    private let interface = BusFixture.interface
    private let echo = BusFixture.echoPath

    override func setUpWithError() throws {
        fixture = try BusFixture()
    }

    override func tearDown() {
        fixture?.tearDown()
        fixture = nil
    }

    private static let sample: [DBusValue] = [
        .byte(.max), .boolean(true), .int16(.min), .uint16(.max), .int32(.min), .uint32(.max),
        .int64(.min), .uint64(.max), .double(-0.5), .double(1e308), .string(""), .string("ü 日本 🦊"),
        .objectPath("/a/b"), .signature("a{sv}"), .array("s", []), .array("a{sv}", []),
        .array("as", [.strings(["x"]), .strings([])]),
        .dictionary(["k": .variant(.dictionary(["n": .bytes([1, 2])])), "e": .dictionary([:])]),
        .structure([.uint32(1), .structure([.boolean(false), .variant(.string("s"))])]),
        .variant(.variant(.int32(-1))),
    ]

    func testConnectionsHaveUniqueNames() {
        XCTAssertTrue(server.uniqueName.hasPrefix(":"), server.uniqueName)
        XCTAssertTrue(client.uniqueName.hasPrefix(":"), client.uniqueName)
        XCTAssertNotEqual(server.uniqueName, client.uniqueName)
        XCTAssertTrue(server.isConnected)
        XCTAssertTrue(client.isConnected)
    }

    func testAsyncCallEchoesValues() async throws {
        let result = try await client.call(destination: server.uniqueName, path: echo, interface: interface,
                                           member: "Echo", arguments: Self.sample)
        XCTAssertEqual(result, Self.sample)
    }

    func testAsyncCallWithoutArguments() async throws {
        let result = try await client.call(destination: server.uniqueName, path: echo, interface: interface, member: "Echo")
        XCTAssertEqual(result, [])
    }

    func testBlockingCallEchoesValues() throws {
        let result = try client.callBlocking(destination: server.uniqueName, path: echo, interface: interface,
                                             member: "Echo", arguments: Self.sample)
        XCTAssertEqual(result, Self.sample)
    }

    func testServerSeesCallerAndRunsHandlerOnItsLoop() async throws {
        let result = try await client.call(destination: server.uniqueName, path: echo, interface: interface,
                                           member: "WhoAmI", arguments: [.uint32(1), .string("x")])
        XCTAssertEqual(result, [.string(client.uniqueName), .string("/test/Echo"), .string(interface),
                                .string("WhoAmI"), .string("us"), .boolean(true)])
    }

    func testCustomErrorRoundTripsAsync() async throws {
        do {
            let result = try await client.call(destination: server.uniqueName, path: echo, interface: interface,
                                               member: "Fail", arguments: [.string("why")])
            XCTFail("expected an error, got \(result)")
        } catch {
            XCTAssertEqual(error, DBusError(BusFixture.customError, "custom failure: why"))
        }
    }

    func testCustomErrorRoundTripsBlocking() throws {
        do {
            let result = try client.callBlocking(destination: server.uniqueName, path: echo, interface: interface,
                                                 member: "Fail", arguments: [.string("blocking")])
            XCTFail("expected an error, got \(result)")
        } catch {
            XCTAssertEqual(error, DBusError(BusFixture.customError, "custom failure: blocking"))
        }
    }

    func testCallMessageGivesErrorReplyMessage() async throws {
        let call = try Message.methodCall(destination: server.uniqueName, path: echo, interface: interface,
                                          member: "Fail", arguments: [.string("m")])
        let reply = try await client.call(call)
        XCTAssertEqual(reply.kind, .error)
        XCTAssertEqual(reply.errorName, BusFixture.customError.rawValue)
        XCTAssertEqual(reply.sender, server.uniqueName)
        XCTAssertEqual(reply.error?.message, "custom failure: m")
    }

    func testUnexportedPathGivesUnknownObject() async throws {
        do {
            _ = try await client.call(destination: server.uniqueName, path: "/nothing/here", interface: interface, member: "Echo")
            XCTFail("expected UnknownObject")
        } catch {
            XCTAssertEqual(error.name, .unknownObject)
        }
        do {
            _ = try client.callBlocking(destination: server.uniqueName, path: "/test/Echo/Child", interface: interface, member: "Echo")
            XCTFail("expected UnknownObject")
        } catch {
            XCTAssertEqual(error.name, .unknownObject)
        }
    }

    func testIntrospectOnParentListsChild() async throws {
        let result = try await client.call(destination: server.uniqueName, path: "/test",
                                           interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
        let xml = try XCTUnwrap(result.first?.string)
        XCTAssertEqual(result.count, 1)
        XCTAssertTrue(xml.contains("<node name=\"Echo\"/>"), xml)
        XCTAssertTrue(xml.contains("org.freedesktop.DBus.Introspectable"), xml)

        let root = try client.callBlocking(destination: server.uniqueName, path: "/",
                                           interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
        let rootXML = try XCTUnwrap(root.first?.string)
        XCTAssertTrue(rootXML.contains("<node name=\"test\"/>"), rootXML)
        XCTAssertFalse(rootXML.contains("<node name=\"Echo\"/>"), rootXML)
    }

    func testOtherMemberOnParentIsUnknownMethod() async throws {
        do {
            _ = try await client.call(destination: server.uniqueName, path: "/test", interface: interface, member: "Echo")
            XCTFail("expected UnknownMethod")
        } catch {
            XCTAssertEqual(error.name, .unknownMethod)
        }
    }

    func testUnknownDestinationFails() async throws {
        do {
            _ = try await client.call(destination: "org.example.Nobody", path: echo, interface: interface, member: "Echo")
            XCTFail("expected ServiceUnknown")
        } catch {
            XCTAssertEqual(error.name, .serviceUnknown)
        }
    }

    func testWellKnownName() async throws {
        XCTAssertEqual(try server.requestName("org.example.TestService"), .primaryOwner)
        XCTAssertEqual(try server.requestName("org.example.TestService"), .alreadyOwner)
        XCTAssertEqual(try client.requestName("org.example.TestService"), .taken)
        let result = try await client.call(destination: "org.example.TestService", path: echo, interface: interface,
                                           member: "Echo", arguments: [.string("by name")])
        XCTAssertEqual(result, [.string("by name")])
    }

    func testUnicastSignalReachesSubscriber() async throws {
        let (stream, continuation) = AsyncStream<(Message, Bool)>.makeStream()
        let clientLoop = fixture.clientLoop
        try await client.subscribe(sender: server.uniqueName, interface: interface, member: "Ping", addMatchRule: false) { message in
            continuation.yield((message, clientLoop.isCurrent))
        }
        // A signal of another member, sent first, must not reach this handler.
        try server.emit(path: echo, interface: interface, member: "Other", arguments: [.string("no")],
                        destination: client.uniqueName)
        try server.emit(path: echo, interface: interface, member: "Ping",
                        arguments: [.string("hello"), .uint32(7), .dictionary(["k": .boolean(true)])],
                        destination: client.uniqueName)
        let received = await firstElement(of: stream, within: 5)
        let (signal, onClientLoop) = try XCTUnwrap(received, "no signal arrived")
        XCTAssertTrue(onClientLoop, "the handler ran off the client's loop")
        XCTAssertEqual(signal.kind, .signal)
        XCTAssertEqual(signal.member, "Ping")
        XCTAssertEqual(signal.interface, interface)
        XCTAssertEqual(signal.path, "/test/Echo")
        XCTAssertEqual(signal.sender, server.uniqueName)
        XCTAssertEqual(signal.destination, client.uniqueName)
        XCTAssertEqual(signal.arguments, [.string("hello"), .uint32(7), .dictionary(["k": .boolean(true)])])
    }

    func testBroadcastSignalWithMatchRule() async throws {
        let (stream, continuation) = AsyncStream<Message>.makeStream()
        try await client.subscribe(sender: server.uniqueName, interface: interface, member: "Broadcast") { message in
            continuation.yield(message)
        }
        try server.emit(path: echo, interface: interface, member: "Broadcast", arguments: [.int64(-9)])
        let received = await firstElement(of: stream, within: 5)
        let signal = try XCTUnwrap(received, "no signal arrived")
        XCTAssertNil(signal.destination)
        XCTAssertEqual(signal.arguments, [.int64(-9)])
    }

    func testShortTimeoutGivesNoReply() async throws {
        let start = Date()
        do {
            let result = try await client.call(destination: server.uniqueName, path: echo, interface: interface,
                                               member: "Never", timeout: 0.3)
            XCTFail("expected NoReply, got \(result)")
        } catch {
            XCTAssertEqual(error.name, .noReply)
        }
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertGreaterThanOrEqual(elapsed, 0.25)
        XCTAssertLessThan(elapsed, 5)
        // The connection still works afterwards.
        let result = try await client.call(destination: server.uniqueName, path: echo, interface: interface,
                                           member: "Echo", arguments: [.boolean(true)])
        XCTAssertEqual(result, [.boolean(true)])
    }

    func testShortTimeoutGivesNoReplyBlocking() throws {
        let start = Date()
        do {
            _ = try client.callBlocking(destination: server.uniqueName, path: echo, interface: interface,
                                        member: "Never", timeout: 0.2)
            XCTFail("expected NoReply")
        } catch {
            XCTAssertEqual(error.name, .noReply)
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
    }

    func testConcurrentCallsGetTheirOwnAnswers() async throws {
        let client = self.client
        let destination = server.uniqueName
        let interface = self.interface
        let echo = self.echo
        let count = 200
        let answers = try await withThrowingTaskGroup(of: (Int, [DBusValue]).self) { group in
            for i in 0..<count {
                group.addTask {
                    let arguments: [DBusValue] = [.uint32(UInt32(i)), .string("call \(i)"), .bytes(Array(repeating: UInt8(i % 256), count: i))]
                    let result = try await client.call(destination: destination, path: echo, interface: interface,
                                                       member: "Echo", arguments: arguments)
                    return (i, result)
                }
            }
            var answers: [Int: [DBusValue]] = [:]
            for try await (i, result) in group { answers[i] = result }
            return answers
        }
        XCTAssertEqual(answers.count, count)
        for i in 0..<count {
            XCTAssertEqual(answers[i], [.uint32(UInt32(i)), .string("call \(i)"), .bytes(Array(repeating: UInt8(i % 256), count: i))])
        }
    }

    func testConcurrentBlockingCallsFromManyThreads() throws {
        let client = self.client
        let destination = server.uniqueName
        let interface = self.interface
        let echo = self.echo
        let results = Results(count: 50)
        DispatchQueue.concurrentPerform(iterations: 50) { i in
            let result = try? client.callBlocking(destination: destination, path: echo, interface: interface,
                                                  member: "Echo", arguments: [.int32(Int32(i))])
            results.set(i, result)
        }
        for i in 0..<50 {
            XCTAssertEqual(results.get(i), [.int32(Int32(i))])
        }
    }

    func testClosedConnectionFailsCalls() async throws {
        client.close()
        XCTAssertFalse(client.isConnected)
        do {
            _ = try await client.call(destination: server.uniqueName, path: echo, interface: interface, member: "Echo")
            XCTFail("expected Disconnected")
        } catch {
            XCTAssertEqual(error.name, .disconnected)
        }
        do {
            _ = try client.callBlocking(destination: server.uniqueName, path: echo, interface: interface, member: "Echo")
            XCTFail("expected Disconnected")
        } catch {
            XCTAssertEqual(error.name, .disconnected)
        }
        // The server is unaffected.
        XCTAssertTrue(server.isConnected)
    }

    func testBusGoingAwayRunsOnDisconnect() async throws {
        let (stream, continuation) = AsyncStream<Bool>.makeStream()
        let clientLoop = fixture.clientLoop
        client.onDisconnect { continuation.yield(clientLoop.isCurrent) }
        fixture.bus.stop()
        let onLoop = await firstElement(of: stream, within: 5)
        XCTAssertEqual(onLoop, true, "onDisconnect did not run on the loop")
        XCTAssertFalse(client.isConnected)
    }
}

/// Results written from many threads.
private final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int: [DBusValue]] = [:]
    init(count: Int) { values.reserveCapacity(count) }
    func set(_ index: Int, _ value: [DBusValue]?) { lock.withLock { values[index] = value } }
    func get(_ index: Int) -> [DBusValue]? { lock.withLock { values[index] } }
}
