internal import CFprint
import DBusCore
import LocalAuthShared

// The Enroller's side of prints kept on the reader's chip (match on chip:
// Synaptics, Goodix MOC, ELAN MOC, FPC; libfprint's virtual_device_storage
// in the tests). Every print we enroll there takes a slot: deleting a finger
// deletes its print on the chip, replacing deletes the old one first, an
// enrollment first checks that the chip does not hold the finger already
// (for any account), and an administrator can list the chip and remove the
// prints no enrolled record owns (orphans), never one that a record owns.
// The check before enrolling is the one enroll operation's (Enrollment.swift).
// Holding the reader for one operation is the service's
// (Readers/ReaderGate.swift, `withReader`).
extension Enroller {
    // MARK: Deleting and replacing

    /// Before the files of `finger` of `uid` go: their prints leave the chips
    /// that hold them. A chip that cannot be reached fails the delete, and
    /// the files stay (a file never goes while its slot stays taken).
    func deleteFromChips(_ finger: FingerName, uid: UInt32, record: CallRecord) async throws(ServiceError) {
        let onChips = prints.allPrints(of: uid).filter {
            $0.finger == finger && prints.isOurs($0) && seams.storesPrints($0.reader)
        }
        for stored in onChips {
            try await seams.gate.withReader(stored.reader, for: record, uid: uid) { session throws(ServiceError) in
                try await Self.deleteFromChip(stored, on: session)
            }
        }
    }

    /// Deletes one enrolled print from the chip of the reader `session` holds.
    static func deleteFromChip(_ stored: PrintStore.StoredPrint, on session: any ReaderSession) async throws(ServiceError) {
        do {
            try await session.deleteFromChip(stored.print)
            Log.info("deleted \(stored.finger.rawValue) from the chip of \(session.identity)")
        } catch {
            if let unusable = session.unusable(error) { throw unusable }
            throw ServiceError(.storageFailed, "could not delete the print on the reader's chip: \(error.message)")
        }
    }

    // MARK: The administrator's view

    /// ListReaderPrints(a{sv}) → aa{sv}: every print on the chip of each
    /// reader that keeps prints, and whether an enrolled record owns it.
    /// Says whose only by "owned": an administrator's tool, never a user's.
    func listReaderPrints(_ arguments: ListReaderPrintsArguments, uid: UInt32,
                          record: CallRecord) async throws(ServiceError) -> [DBusValue] {
        var rows: [DBusValue] = []
        for identity in seams.chipReaders {
            let owners = prints.everyPrint(on: identity)
            let onChip = try await seams.gate.withReader(identity, for: record, uid: uid) { session throws(ServiceError) in
                try await Self.listChip(session)
            }
            for print in onChip {
                let owned = owners.contains { Readers.same($0.print, print) }
                rows.append(.dictionary([
                    LocalAuthBus.PrintKey.driver: .string(identity.driver),
                    LocalAuthBus.PrintKey.deviceID: .string(identity.deviceID),
                    LocalAuthBus.PrintKey.owned: .boolean(owned),
                ]))
            }
        }
        return [.array("a{sv}", rows)]
    }

    /// RemoveOrphanPrints(a{sv}) → u: deletes from each chip the prints no
    /// enrolled record owns (left by a crash, another system, an old
    /// install); how many went. A print a record owns is never touched.
    func removeOrphanPrints(_ arguments: RemoveOrphanPrintsArguments, uid: UInt32,
                            record: CallRecord) async throws(ServiceError) -> [DBusValue] {
        var removed: UInt32 = 0
        for identity in seams.chipReaders {
            let owners = prints.everyPrint(on: identity)
            removed += try await seams.gate.withReader(identity, for: record, uid: uid) { session throws(ServiceError) in
                var count: UInt32 = 0
                for print in try await Self.listChip(session) where !owners.contains(where: { Readers.same($0.print, print) }) {
                    do throws(GLibError) {
                        try await session.deleteFromChip(print)
                        count += 1
                    } catch {
                        throw ServiceError(.storageFailed,
                                                  "could not delete a print on the chip: \(error.message)")
                    }
                }
                return count
            }
        }
        Log.info("uid \(uid) removed \(removed) print(s) no record owns from the readers' chips")
        return [.uint32(removed)]
    }

    private static func listChip(_ session: any ReaderSession) async throws(ServiceError) -> [GObjectRef] {
        do {
            return try await session.chipPrints()
        } catch {
            if let unusable = session.unusable(error) { throw unusable }
            throw ServiceErrors.la(.systemCancel, "could not list the prints on the reader's chip: \(error.message)")
        }
    }
}
