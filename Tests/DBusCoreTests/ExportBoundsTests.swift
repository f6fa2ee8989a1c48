import DBusCore
import Foundation
import XCTest

/// Issue 30 item 1: every exported object states the largest body it takes,
/// and a larger call is answered by the connection before any handler runs,
/// so nothing decodes it, keeps it or sends it back.
final class ExportBoundsTests: XCTestCase {
    private var fixture: BusFixture!
    private var server: BusConnection { fixture.server }
    private var client: BusConnection { fixture.client }

    override func setUpWithError() throws {
        fixture = try BusFixture()
    }

    override func tearDown() {
        fixture?.tearDown()
        fixture = nil
    }

    /// A handler that counts the calls it saw and echoes their first argument back in an error.
    private func exportCounting(
        _ path: ObjectPath, limit: Int,
        oversized: (@Sendable (IncomingCall) -> Void)? = nil
    ) -> Counter {
        let seen = Counter()
        server.export(path, maximumBodyBytes: limit, oversized: oversized) { call in
            seen.increment()
            call.fail(DBusError(.unknownProperty, "no property \(call.arguments.last?.string ?? "")"))
        }
        return seen
    }

    private func get(_ path: ObjectPath, name: String) async -> DBusError? {
        do {
            _ = try await client.call(
                destination: server.uniqueName, path: path, interface: "org.freedesktop.DBus.Properties",
                member: "Get", arguments: [.string("org.example.Test"), .string(name)])
            return nil
        } catch {
            return error
        }
    }

    func testALargerCallNeverReachesTheHandler() async throws {
        let seen = exportCounting("/test/Bounded", limit: 16 * 1024)
        let huge = String(repeating: "n", count: 4 << 20)
        let refused = await get("/test/Bounded", name: huge)
        XCTAssertEqual(refused?.name, .limitsExceeded)
        XCTAssertLessThan(refused?.message.utf8.count ?? .max, 200, "the refusal carries no part of the call")
        XCTAssertEqual(seen.value, 0, "the handler must not see the call")
        // Within the bound: the handler serves it.
        let served = await get("/test/Bounded", name: "Name")
        XCTAssertEqual(served?.name, .unknownProperty)
        XCTAssertEqual(seen.value, 1)
    }

    func testTheObjectsOwnRefusalAnswersInItsContract() async throws {
        let seen = exportCounting("/test/Contract", limit: 1024) { call in
            call.fail(DBusError(DBusError.Name(rawValue: "org.example.Test.Error.LimitExceeded"), "too large"))
        }
        let refused = await get("/test/Contract", name: String(repeating: "x", count: 2048))
        XCTAssertEqual(refused, DBusError(DBusError.Name(rawValue: "org.example.Test.Error.LimitExceeded"), "too large"))
        XCTAssertEqual(seen.value, 0)
    }

    /// Whatever a handler writes into an error, the reply's text stays small:
    /// an argument echoed in full is cut at `Message.maximumErrorTextBytes`.
    func testAnErrorEchoingItsArgumentIsCut() async throws {
        _ = exportCounting("/test/Echoing", limit: .max)
        let refused = await get("/test/Echoing", name: String(repeating: "é", count: 100_000))
        let text = try XCTUnwrap(refused?.message)
        XCTAssertEqual(refused?.name, .unknownProperty)
        XCTAssertLessThanOrEqual(text.utf8.count, Message.maximumErrorTextBytes + "…".utf8.count)
        XCTAssertTrue(text.hasPrefix("no property éé"), text)
    }

    /// Issue 30 item 9: an object that is gone (an unplugged reader) is
    /// not served, listed or kept.
    func testAnUnexportedObjectIsGoneFromTheBus() async throws {
        let seen = exportCounting("/test/Parent/Child", limit: 1024)
        let before = await get("/test/Parent/Child", name: "x")
        XCTAssertEqual(before?.name, .unknownProperty)
        let listed = try await client.call(
            destination: server.uniqueName, path: "/test/Parent", interface: "org.freedesktop.DBus.Introspectable",
            member: "Introspect")
        XCTAssertTrue(listed.first?.string?.contains("<node name=\"Child\"/>") ?? false, "\(listed)")
        server.unexport("/test/Parent/Child")
        XCTAssertFalse(server.exportedPaths.contains("/test/Parent/Child"))
        let after = await get("/test/Parent/Child", name: "x")
        XCTAssertEqual(after?.name, .unknownObject)
        XCTAssertEqual(seen.value, 1)
        do {
            let parent = try await client.call(
                destination: server.uniqueName, path: "/test/Parent", interface: "org.freedesktop.DBus.Introspectable",
                member: "Introspect")
            XCTFail("the parent still lists a child: \(parent)")
        } catch {
            XCTAssertEqual(error.name, .unknownObject)
        }
    }

    func testTheBufferedIncomingLimitIsSet() {
        XCTAssertGreaterThan(server.bufferedIncomingLimit, 8 << 20, "libdbus's default")
        server.limitBufferedIncoming(bytes: 1 << 20)
        XCTAssertEqual(server.bufferedIncomingLimit, 1 << 20)
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
