internal import CFprint
import DBusCore
import LocalAuthShared

// Wiring only: the reader choice, the gate, readers and bus as the
// Enroller's seams and the print store as its prints, each given as the
// components they are; a print saved or deleted is an event (ServiceEvents).

@ServiceActor
struct ServiceEnrollerSeams: EnrollerSeams, ReaderLookupWiring {
    let readerChoice: ReaderChoice
    let readers: Readers
    let gate: ReaderGate
    let bus: BusConnection

    var chipReaders: [Readers.Identity] { readers.usableReaders.filter { storesPrints($0) } }
    func storesPrints(_ reader: Readers.Identity) -> Bool { readers.usable(reader)?.storesPrints == true }
    func checksDuplicates(_ reader: Readers.Identity) -> Bool { readers.usable(reader)?.checksDuplicates == true }

    func isEnrolling(_ sender: String) -> Bool { gate.queue.isEnrolling(sender) }

    func emitEnrollStatus(to destination: String, _ progress: EnrollProgress, stage: UInt32, stages: UInt32) {
        try? bus.emit(
            path: ObjectPath(stringLiteral: LocalAuthBus.objectPath), interface: LocalAuthBus.interface,
            member: LocalAuthBus.Signal.enrollStatus,
            arguments: [.string(progress.rawValue), .uint32(stage), .uint32(stages)],
            destination: destination)
    }
}

/// The print store, as the Enroller uses it; each print saved or deleted
/// tells the Environment that its user's state changed (LAEnvironment's
/// subscribers of that uid hear it when the call ends).
@ServiceActor
struct ServiceEnrollerPrints: EnrollerPrints {
    let prints: PrintStore
    let events: ServiceEvents

    func prints(of uid: UInt32, for reader: Readers.Identity) -> [PrintStore.StoredPrint] {
        prints.prints(of: uid, for: reader)
    }
    func allPrints(of uid: UInt32) -> [PrintStore.StoredPrint] { prints.allPrints(of: uid) }
    func everyPrint(on reader: Readers.Identity) -> [PrintStore.StoredPrint] { prints.everyPrint(on: reader) }
    func isOurs(_ stored: PrintStore.StoredPrint) -> Bool { prints.isOurs(stored) }
    func save(_ print: GObjectRef, finger: FingerName, uid: UInt32, reader: Readers.Identity) throws -> PrintFile {
        defer { events.publishUserChanged(uid) }
        return try prints.save(print, finger: finger, uid: uid, reader: reader)
    }
    func delete(_ finger: FingerName, uid: UInt32) throws -> Bool {
        defer { events.publishUserChanged(uid) }
        return try prints.delete(finger, uid: uid)
    }
    func deleteAll(uid: UInt32) throws -> Int {
        defer { events.publishUserChanged(uid) }
        return try prints.deleteAll(uid: uid)
    }
}

