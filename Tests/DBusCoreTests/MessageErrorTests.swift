import XCTest
import DBusCore

/// Replies and errors as messages, built offline from a method call that came
/// over a private bus (libdbus replies only to a call that has a serial).
final class MessageErrorTests: XCTestCase {
    private var fixture: BusFixture!

    override func setUpWithError() throws {
        fixture = try BusFixture()
    }

    override func tearDown() {
        fixture?.tearDown()
        fixture = nil
    }

    private func makeCall() async throws -> Message {
        let call = try await fixture.receivedCall(arguments: [.string("in")])
        XCTAssertEqual(call.kind, .methodCall)
        XCTAssertNotEqual(call.serial, 0)
        XCTAssertEqual(call.sender, fixture.client.uniqueName)
        XCTAssertEqual(call.arguments, [.string("in")])
        return call
    }

    func testErrorReplyCarriesNameAndMessage() async throws {
        let custom = DBusError("org.example.Test.Error.Custom", "it broke: ü 🦊")
        let call = try await makeCall()
        let reply = try XCTUnwrap(call.errorReply(custom))
        XCTAssertEqual(reply.kind, .error)
        XCTAssertEqual(reply.replySerial, call.serial)
        XCTAssertEqual(reply.errorName, "org.example.Test.Error.Custom")
        XCTAssertEqual(reply.arguments, [.string("it broke: ü 🦊")])
        XCTAssertEqual(reply.error, custom)
        XCTAssertThrowsError(try reply.result()) { error in
            XCTAssertEqual(error as? DBusError, custom)
        }
    }

    func testErrorReplyOfStandardAndContractNames() async throws {
        let errors = [
            DBusError(.invalidArgs, "bad"),
            DBusError(.unknownObject, "no object"),
            DBusError(.accessDenied, "no"),
            DBusError("org.example.LocalAuth.Error.UserCancel", "the user cancelled"),
            DBusError("org.example.LocalAuth.Error.NotInteractive", ""),
        ]
        let call = try await makeCall()
        for expected in errors {
            let reply = try XCTUnwrap(call.errorReply(expected))
            XCTAssertEqual(reply.error, expected)
            do {
                _ = try reply.result()
                XCTFail("result() of an error reply must throw")
            } catch {
                XCTAssertEqual(error, expected)
            }
        }
    }

    func testErrorReplyReplacesNULInMessage() async throws {
        let call = try await makeCall()
        let reply = try XCTUnwrap(call.errorReply(DBusError(.failed, "a\0b")))
        XCTAssertEqual(reply.error, DBusError(.failed, "a b"))
    }

    func testMethodReturnRoundTripsThroughResult() async throws {
        let values: [DBusValue] = [.boolean(true), .dictionary(["k": .strings(["v"])]), .bytes([1, 2, 3]),
                                   .structure([.uint32(1), .variant(.double(-0.25))])]
        let call = try await makeCall()
        let reply = try call.methodReturn(values)
        XCTAssertEqual(reply.replySerial, call.serial)
        XCTAssertEqual(reply.kind, .methodReturn)
        XCTAssertNil(reply.error)
        XCTAssertNil(reply.errorName)
        XCTAssertEqual(try reply.result(), values)
        XCTAssertEqual(reply.signature, "ba{sv}ay(uv)")
    }

    func testEmptyMethodReturn() async throws {
        let call = try await makeCall()
        let reply = try call.methodReturn()
        XCTAssertEqual(reply.replySerial, call.serial)
        XCTAssertEqual(reply.kind, .methodReturn)
        XCTAssertEqual(try reply.result(), [])
        XCTAssertEqual(reply.signature, "")
    }

    func testMethodReturnWithNULThrowsInvalidArgs() async throws {
        let call = try await makeCall()
        do {
            let reply = try call.methodReturn([.string("ok"), .dictionary(["k": .string("not\0ok")])])
            XCTFail("expected InvalidArgs, got a reply with signature \(reply.signature)")
        } catch {
            XCTAssertEqual(error.name, .invalidArgs)
        }
    }

    func testErrorDescription() {
        XCTAssertEqual(DBusError(.noReply, "late").description, "org.freedesktop.DBus.Error.NoReply: late")
        XCTAssertEqual(DBusError.Name.invalidArgs.rawValue, "org.freedesktop.DBus.Error.InvalidArgs")
        XCTAssertEqual(DBusError.Name.unknownObject.rawValue, "org.freedesktop.DBus.Error.UnknownObject")
        XCTAssertEqual(DBusError.Name.noReply.rawValue, "org.freedesktop.DBus.Error.NoReply")
        XCTAssertNotEqual(DBusError(.failed, "a"), DBusError(.failed, "b"))
        XCTAssertNotEqual(DBusError(.failed, "a"), DBusError(.noReply, "a"))
    }
}
