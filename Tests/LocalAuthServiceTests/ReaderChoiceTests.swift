import DBusCore
@testable import LocalAuthService
import LocalAuthShared
import XCTest

/// The reader choice component (Sources/LocalAuthService/Readers/ReaderChoice.swift)
/// with fakes: which reader serves a user while asleep or under the lid, and
/// hotplug announced only when BiometryType changes. (The pure choice rule:
/// ServiceRulesTests.)
final class ReaderChoiceTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    @ServiceActor
    private final class Seams: ReaderChoiceSeams {
        static let builtIn = Readers.Identity(driver: "elan", deviceID: "0")
        static let usb = Readers.Identity(driver: "synaptics", deviceID: "1")
        var usableReaders: [Readers.Identity] = [builtIn, usb]
        var builtInReaders: Set<Readers.Identity> = [builtIn]
        var readersPresent: Bool { !usableReaders.isEmpty }
        var asleep = false
        var lidClosed = false
        var withPrints: [UInt32: Set<Readers.Identity>] = [:]
        var announced: [BiometryKind] = []
        var environmentChecks = 0
        func readers(withPrintsOf uid: UInt32) -> Set<Readers.Identity> { withPrints[uid] ?? [] }
        func prints(of uid: UInt32, for reader: Readers.Identity) -> [PrintStore.StoredPrint] { [] }
        func appKey(of caller: CallerRecord) -> String { "app" }
        func environmentMayHaveChanged() { environmentChecks += 1 }
        func announceBiometryType(_ kind: BiometryKind) { announced.append(kind) }
    }

    @ServiceActor
    func testNoReaderServesWhileAsleepAndOnlyExternalOnesUnderTheLid() async {
        let seams = Seams()
        let choice = ReaderChoice(configured: nil, seams: seams)
        seams.withPrints[1000] = [Seams.usb]
        XCTAssertEqual(choice.reader(for: 1000), Seams.usb, "the reader with the user's prints")
        XCTAssertEqual(choice.reader(for: 1001), Seams.builtIn, "else the first")
        seams.lidClosed = true
        XCTAssertEqual(choice.reader(for: 1001), Seams.usb)
        XCTAssertEqual(choice.readerWithLidOpen(for: 1001), Seams.builtIn, "enrolment does not change with the lid")
        seams.usableReaders = [Seams.builtIn]
        XCTAssertNil(choice.reader(for: 1000))
        XCTAssertTrue(choice.noReaderError.message.contains("lid"), choice.noReaderError.message)
        seams.asleep = true
        XCTAssertTrue(choice.reachableReaders.isEmpty)
        XCTAssertTrue(choice.noReaderError.message.contains("sleep"), choice.noReaderError.message)
    }

    @ServiceActor
    func testHotplugAnnouncesBiometryTypeOnlyWhenItChanges() async {
        let seams = Seams()
        let choice = ReaderChoice(configured: nil, seams: seams)
        choice.startFollowingHotplug()
        seams.usableReaders = [Seams.usb]
        choice.readersChanged()
        XCTAssertEqual(seams.announced, [], "still a reader: BiometryType did not change")
        XCTAssertEqual(seams.environmentChecks, 1, "but subscribers may have a new state")
        seams.usableReaders = []
        choice.readersChanged()
        seams.usableReaders = [Seams.builtIn]
        choice.readersChanged()
        choice.readersChanged()
        XCTAssertEqual(seams.announced, [BiometryKind.none, .touchID])
        XCTAssertEqual(seams.environmentChecks, 4)
    }
}
