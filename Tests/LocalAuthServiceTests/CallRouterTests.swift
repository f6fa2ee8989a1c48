import DBusCore
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The router's serve path, for any contract (Bus/CallRouter.swift), over
/// fakes of the wire, the bus driver and polkit: bounds and the row before
/// anything is decoded, registration, the caller's record, what must hold
/// before and after polkit, polkit's verdict, an interruption, the answer in
/// the contract's own words, Properties. Milliseconds, no bus.
final class CallRouterTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    /// The object a test contract is served on.
    @ServiceActor
    final class Door {
        var open = true
        var knocks: [String] = []
    }

    struct KnockArguments: CallArguments {
        let who: String
        var namedUser: String? { who.isEmpty ? nil : who }
        init(_ arguments: [DBusValue]) throws(ServiceError) {
            who = arguments[0].string ?? ""
            guard who.count < 100 else { throw ServiceErrors.invalidArgs("too long a name") }
        }
    }

    /// A contract that names its errors as fprintd does, with fprintd's rule for another user.
    @ServiceActor
    static let contract = BusContract<Door>(
        interface: "org.example.Door",
        methods: [
            "Knock": MethodSpec(
                signature: "s",
                authorization: Authorization(actions: ["door.knock", "door.ring"], interactive: true, anotherUser: .also("door.forOthers")),
                KnockArguments.self,
                admits: { door, _ throws(ServiceError) in
                    guard door.open else { throw ServiceError(.notClaimed, "the door is shut") }
                },
                handler: { door, call throws(ServiceError) in
                    door.knocks.append("\(call.uid)→\(call.target)")
                    return [.string("come in")]
                }),
            "Leave": MethodSpec(signature: "", authorization: .none, NoArguments.self) { _, _ throws(ServiceError) in
                throw ServiceError(.busy, "not now")
            },
        ],
        errors: .fprintd, introspection: "<node/>",
        properties: { door in ["Open": .boolean(door.open)] },
        refusal: FprintdServer.refusal)

    private static let fprintd = "net.reactivated.Fprint.Error."

    @ServiceActor
    func testACallIsRegisteredServedAndAnswered() async {
        let rig = RouterRig()
        let door = Door()
        rig.callers.uids[":1.7"] = 1000
        rig.polkit.verdicts["door.ring"] = .authorized
        let call = FakeWireCall("Knock", "s", [.string("")])
        await rig.send(call, Self.contract, door)
        XCTAssertEqual(call.answers, [.reply([.string("come in")])])
        XCTAssertEqual(rig.polkit.asked, ["door.knock", "door.ring"], "any one of the row's actions suffices, asked in order")
        XCTAssertEqual(door.knocks, ["1000→1000"])
        XCTAssertTrue(rig.registry.isEmpty, "the call leaves the registry when answered")
        XCTAssertEqual(rig.callsEnded, 1)
    }

    @ServiceActor
    func testBoundsAndTheRowAreCheckedBeforeAnythingIsDecodedOrAsked() async {
        let rig = RouterRig()
        let door = Door()
        rig.callers.uids[":1.7"] = 1000
        let fds = FakeWireCall("Knock", "s", [.string("")])
        fds.carriesFileDescriptors = true
        let big = FakeWireCall("Knock", "s", [.string("")])
        big.approximateBodySize = ServiceLimits.maximumBodyBytes + 1
        let unknown = FakeWireCall("Kick")
        let wrong = FakeWireCall("Knock", "u", [.uint32(1)])
        let bad = FakeWireCall("Knock", "s", [.string(String(repeating: "x", count: 200))])
        for call in [fds, big, unknown, wrong, bad] { await rig.send(call, Self.contract, door) }
        XCTAssertEqual(fds.answers, [.error("org.freedesktop.DBus.Error.InvalidArgs")])
        XCTAssertEqual(big.answers, [.error("org.freedesktop.DBus.Error.LimitsExceeded")])
        XCTAssertEqual(unknown.answers, [.error("org.freedesktop.DBus.Error.UnknownMethod")])
        XCTAssertEqual(wrong.answers, [.error("org.freedesktop.DBus.Error.InvalidArgs")])
        // A bad argument, in the contract's words (fprintd's: a bad argument is a finger name).
        XCTAssertEqual(bad.answers, [.error(Self.fprintd + "InvalidFingername")])
        XCTAssertEqual(rig.polkit.asked, [], "polkit is never asked about a malformed call")
        XCTAssertTrue(door.knocks.isEmpty)
        XCTAssertTrue(rig.registry.isEmpty)
    }

    @ServiceActor
    func testWhatMustHoldIsCheckedBeforePolkitAndAgainAfter() async {
        let rig = RouterRig()
        let door = Door()
        rig.callers.uids[":1.7"] = 1000
        rig.polkit.verdicts["door.knock"] = .authorized
        door.open = false
        let shut = FakeWireCall("Knock", "s", [.string("")])
        await rig.send(shut, Self.contract, door)
        XCTAssertEqual(shut.answers, [.error(Self.fprintd + "ClaimDevice")])
        XCTAssertEqual(rig.polkit.asked, [], "a call that cannot run never reaches polkit")

        // The door shuts while polkit thinks: the check after polkit refuses.
        door.open = true
        rig.polkit.meanwhile = { door.open = false }
        let late = FakeWireCall("Knock", "s", [.string("")])
        await rig.send(late, Self.contract, door)
        XCTAssertEqual(late.answers, [.error(Self.fprintd + "ClaimDevice")])
        XCTAssertTrue(door.knocks.isEmpty)
    }

    @ServiceActor
    func testPolkitsNoIsTheContractsRefusalAndAnotherUserNeedsItsOwnAction() async {
        let rig = RouterRig()
        let door = Door()
        rig.callers.uids[":1.7"] = 1000
        let denied = FakeWireCall("Knock", "s", [.string("")])
        await rig.send(denied, Self.contract, door)
        XCTAssertEqual(denied.answers, [.error(Self.fprintd + "PermissionDenied")])
        XCTAssertEqual(denied.messages, ["Not Authorized: door.ring"])

        // Another user: its action first (fprintd's setusername), before the name is looked up.
        rig.polkit.verdicts["door.knock"] = .authorized
        let other = FakeWireCall("Knock", "s", [.string("no-such-user-\(UInt32.random(in: 0...UInt32.max))")])
        await rig.send(other, Self.contract, door)
        XCTAssertEqual(other.answers, [.error(Self.fprintd + "PermissionDenied")])
        XCTAssertEqual(other.messages, ["Not Authorized: door.forOthers"])
        rig.polkit.verdicts["door.forOthers"] = .authorized
        let allowed = FakeWireCall("Knock", "s", [.string("no-such-user-\(UInt32.random(in: 0...UInt32.max))")])
        await rig.send(allowed, Self.contract, door)
        XCTAssertEqual(allowed.answers, [.error(Self.fprintd + "Internal")], "no such user: looked up only once polkit said yes")
        let root = FakeWireCall("Knock", "s", [.string("root")])
        await rig.send(root, Self.contract, door)
        XCTAssertEqual(root.answers, [.reply([.string("come in")])])
        XCTAssertEqual(door.knocks, ["1000→0"], "the named user is the call's target")
    }

    @ServiceActor
    func testAnInterruptedCallIsAnsweredWithItsReasonInTheContractsWords() async {
        let rig = RouterRig()
        let door = Door()
        rig.callers.uids[":1.7"] = 1000
        rig.polkit.verdicts["door.knock"] = .authorized
        rig.polkit.meanwhile = { rig.registry.senderVanished(":1.7") }
        let call = FakeWireCall("Knock", "s", [.string("")])
        await rig.send(call, Self.contract, door)
        XCTAssertEqual(call.answers, [.error(Self.fprintd + "Internal")], "SystemCancel, in fprintd's words")
        XCTAssertTrue(door.knocks.isEmpty)

        // The same interruption on org.example.LocalAuth is its own name.
        XCTAssertEqual(
            Interruption.callerVanished.error.dbusError(.localAuth).name.rawValue,
            LocalAuthErrorCode.systemCancel.dbusName)
    }

    @ServiceActor
    func testAnUnknownCallerAndAStoppingRouterAreRefused() async {
        let rig = RouterRig()
        let door = Door()
        let stranger = FakeWireCall("Knock", "s", [.string("")])
        await rig.send(stranger, Self.contract, door)
        XCTAssertEqual(stranger.answers, [.error(Self.fprintd + "Internal")])
        rig.callers.uids[":1.7"] = 1000
        rig.router.stop()
        let late = FakeWireCall("Leave")
        await rig.send(late, Self.contract, door)
        XCTAssertEqual(late.answers, [.error(Self.fprintd + "Internal")])
        XCTAssertEqual(rig.polkit.asked, [])
    }

    @ServiceActor
    func testAHandlersErrorIsNamedByTheContract() async {
        let rig = RouterRig()
        rig.callers.uids[":1.7"] = 1000
        let call = FakeWireCall("Leave")
        await rig.send(call, Self.contract, Door())
        XCTAssertEqual(call.answers, [.error(Self.fprintd + "AlreadyInUse")])
        // The same kind on org.example.LocalAuth.
        XCTAssertEqual(ErrorTable.localAuth.name(of: .busy), LocalAuthServiceError.busy)
    }

    @ServiceActor
    func testPropertiesAreReadOnlyAndEchoNamesBounded() async {
        let rig = RouterRig()
        let door = Door()
        let properties = "org.freedesktop.DBus.Properties"
        let get = FakeWireCall("Get", "ss", [.string("org.example.Door"), .string("Open")], interface: properties)
        let all = FakeWireCall("GetAll", "s", [.string("")], interface: properties)
        let other = FakeWireCall("GetAll", "s", [.string("org.example.Window")], interface: properties)
        let huge = String(repeating: "p", count: 1 << 20)
        let unknown = FakeWireCall("Get", "ss", [.string("org.example.Door"), .string(huge)], interface: properties)
        let set = FakeWireCall(
            "Set", "ssv", [.string("org.example.Door"), .string(huge), .variant(.boolean(false))],
            interface: properties)
        let introspect = FakeWireCall("Introspect", interface: "org.freedesktop.DBus.Introspectable")
        // A name too large to decode at all is refused by its size first (issue 30: 30 MB names).
        let oversized = FakeWireCall("Get", "ss", [.string("org.example.Door"), .string(huge)], interface: properties)
        oversized.approximateBodySize = huge.utf8.count + 64
        for call in [get, all, other, unknown, set, introspect, oversized] { await rig.send(call, Self.contract, door) }
        XCTAssertEqual(oversized.answers, [.error("org.freedesktop.DBus.Error.LimitsExceeded")])
        XCTAssertEqual(get.answers, [.reply([.variant(.boolean(true))])])
        XCTAssertEqual(all.answers, [.reply([.dictionary(["Open": .boolean(true)])])])
        XCTAssertEqual(other.answers, [.reply([.dictionary([:])])])
        XCTAssertEqual(unknown.answers, [.error("org.freedesktop.DBus.Error.UnknownProperty")])
        XCTAssertEqual(set.answers, [.error("org.freedesktop.DBus.Error.PropertyReadOnly")])
        for message in unknown.messages + set.messages {
            XCTAssertLessThan(message.utf8.count, ServiceLimits.echoedArgumentBytes + 64, "the name is echoed bounded")
        }
        XCTAssertEqual(introspect.answers, [.reply([.string("<node/>")])])
        XCTAssertTrue(rig.registry.isEmpty, "Properties and Introspect are answered at once")
    }

    /// org.example.LocalAuth's rule for another user: `manage` instead of the row's action.
    /// (async: Swift 6.0's SwiftPM lists a synchronous actor-isolated test in
    /// a nonisolated context, which does not compile.)
    @ServiceActor
    func testLocalAuthsRowsAskManageInsteadForAnotherUser() async {
        let rule = Authorization.localAuth(.enroll, interactive: true)
        XCTAssertEqual(rule.actions, [PolkitAction.enroll.rawValue])
        guard case .instead(let action) = rule.anotherUser else { return XCTFail("manage replaces the row's action") }
        XCTAssertEqual(action, PolkitAction.manage.rawValue)
        for (name, spec) in FprintdDevice.methods {
            guard case .also(let action) = spec.authorization.anotherUser else { return XCTFail(name) }
            XCTAssertEqual(action, FprintdBus.Action.setUsername.rawValue, name)
            XCTAssertTrue(spec.authorization.interactive, name)
        }
    }
}
