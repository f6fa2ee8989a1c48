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
            try await seams.withReader(stored.reader, for: record, uid: uid) { device throws(ServiceError) in
                try await deleteFromChip(stored, on: device)
            }
        }
    }

    /// Deletes one enrolled print from the chip of `device` (held).
    func deleteFromChip(_ stored: PrintStore.StoredPrint, on device: Readers.Reader) async throws(ServiceError) {
        do {
            try await seams.deleteFromChip(stored.print, on: device)
            Log.info("deleted \(stored.finger.rawValue) from the chip of \(device.identity)")
        } catch {
            if let unusable = seams.unusable(error, device) { throw unusable }
            throw ServiceError(.storageFailed,
                                      "could not delete the print on the reader's chip: \(error.message)")
        }
    }

    // MARK: Before enrolling

    /// On a reader that keeps prints on its chip: one scan identified against
    /// every enrolled record's print on it (every account's, both sources;
    /// each names a slot on the chip), except the finger being replaced;
    /// DuplicatePrint if it matches one, never saying whose. A print on the
    /// chip that no record owns is refused by the chip's own enroll
    /// (FP_DEVICE_ERROR_DATA_DUPLICATE), as are all on a reader that checks
    /// duplicates itself (FP_DEVICE_FEATURE_DUPLICATES_CHECK).
    func refuseDuplicateOnChip(_ device: Readers.Reader, except replaced: (uid: UInt32, finger: FingerName),
                               asker: UInt32, cancellable: Cancellable) async throws(ServiceError) {
        guard device.storesPrints, !device.checksDuplicates else { return }
        let replacedPaths = Set(prints.allPrints(of: replaced.uid).filter { $0.finger == replaced.finger }.map(\.path))
        let candidates = prints.everyPrint(on: device.identity).filter { !replacedPaths.contains($0.path) }
        let gallery = candidates.map(\.print)
        let own = Set(prints.allPrints(of: replaced.uid).map(\.path))
        guard !gallery.isEmpty else { return }
        while true {
            let result: Readers.ScanResult
            do {
                result = try await seams.identify(gallery, on: device, cancellable: cancellable)
            } catch {
                // The chip holds no such print: a new finger.
                if error.isDevice(FP_DEVICE_ERROR_DATA_NOT_FOUND_VALUE) { return }
                if let unusable = seams.unusable(error, device) { throw unusable }
                if error.isCancelled { throw ServiceErrors.la(.systemCancel, "enrollment cancelled") }
                throw ServiceErrors.la(.systemCancel, "could not check the reader's chip: \(error.message)")
            }
            switch result {
            case .match(let matched):
                Log.notice("enrollment refused: the finger is already on the chip of \(device.identity)")
                // A hit on another account's print is a guess that came true.
                let owner = candidates.first { $0.print.pointer == matched.pointer }
                if owner.map({ !own.contains($0.path) }) ?? true {
                    duplicateChecks.matchedAnotherAccount(asker: asker)
                }
                throw Self.duplicateError
            case .noMatch: return
            case .retry: continue
            }
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
            let onChip = try await seams.withReader(identity, for: record, uid: uid) { device throws(ServiceError) in
                try await listChip(device)
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
            removed += try await seams.withReader(identity, for: record, uid: uid) { device throws(ServiceError) in
                var count: UInt32 = 0
                for print in try await listChip(device) where !owners.contains(where: { Readers.same($0.print, print) }) {
                    do throws(GLibError) {
                        try await seams.deleteFromChip(print, on: device)
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

    private func listChip(_ device: Readers.Reader) async throws(ServiceError) -> [GObjectRef] {
        do {
            return try await seams.chipPrints(on: device)
        } catch {
            if let unusable = seams.unusable(error, device) { throw unusable }
            throw ServiceErrors.la(.systemCancel, "could not list the prints on the reader's chip: \(error.message)")
        }
    }
}
