import DBusCore
import LocalAuthShared

// The Enroller's listing and deleting: the caller's fingers on the reader
// that serves them, every print of a user, and deletion from our store only
// (fprintd's is read-only), each print leaving its chip before its file goes.
extension Enroller {
    // MARK: Listing

    /// ListEnrolledFingers(): the caller's fingers that the reader serving them offers.
    func listEnrolledFingers(uid: UInt32) throws(ServiceError) -> [DBusValue] {
        guard let reader = seams.reader(for: uid) else { throw seams.noReaderError }
        return [.strings(prints.prints(of: uid, for: reader).map(\.finger.rawValue))]
    }

    /// ListEnrolledPrints(a{sv}): every print of the user (`target`), each source and reader.
    func listEnrolledPrints(_ arguments: ListEnrolledPrintsArguments, target uid: UInt32) -> [DBusValue] {
        let inUse = seams.reader(for: uid).map { Set(prints.prints(of: uid, for: $0).map(\.path)) } ?? []
        let rows = prints.allPrints(of: uid).map { stored -> DBusValue in
            var entry: [String: DBusValue] = [
                LocalAuthBus.PrintKey.finger: .string(stored.finger.rawValue),
                LocalAuthBus.PrintKey.source: .string(stored.source.rawValue),
                LocalAuthBus.PrintKey.driver: .string(stored.reader.driver),
                LocalAuthBus.PrintKey.deviceID: .string(stored.reader.deviceID),
                LocalAuthBus.PrintKey.inUse: .boolean(inUse.contains(stored.path)),
                LocalAuthBus.PrintKey.readOnly: .boolean(!prints.isOurs(stored)),
            ]
            if let created = stored.created { entry[LocalAuthBus.PrintKey.created] = .int64(created) }
            return .dictionary(entry)
        }
        return [.array("a{sv}", rows)]
    }

    // MARK: Deleting (our store only; fprintd's is read-only)

    /// DeleteEnrolledFinger(s finger).
    func deleteFinger(_ arguments: DeleteEnrolledFingerArguments, target: UInt32, record: CallRecord) async throws(ServiceError) {
        try await deleteFinger(arguments.finger, uid: target, record: record)
    }

    /// DeleteEnrolledFingerWithOptions(s finger, a{sv}): `user` (settled: `target`).
    func deleteFinger(
        _ arguments: DeleteEnrolledFingerWithOptionsArguments, target: UInt32,
        record: CallRecord
    ) async throws(ServiceError) {
        try await deleteFinger(arguments.finger, uid: target, record: record)
    }

    private func deleteFinger(_ finger: FingerName, uid: UInt32, record: CallRecord) async throws(ServiceError) {
        // The print on the chip first (EnrollerChips.swift): its file goes
        // only once its slot is free.
        try await deleteFromChips(finger, uid: uid, record: record)
        let deleted: Bool
        do {
            deleted = try prints.delete(finger, uid: uid)
        } catch {
            throw ServiceError(.storageFailed, "could not delete: \(error)")
        }
        guard deleted else {
            if prints.allPrints(of: uid).contains(where: { $0.finger == finger && $0.source == .fprintd }) {
                throw ServiceError(
                    .readOnly,
                    "\(finger.rawValue) was enrolled with fprintd, whose store localauthd only reads; remove it with fprintd-delete")
            }
            throw ServiceError(.notEnrolled, "\(finger.rawValue) is not enrolled")
        }
        Log.info("deleted \(finger.rawValue) of uid \(uid)")
    }

    /// DeleteEnrolledFingers(): every print of the caller (`target`: the caller).
    func deleteAll(target: UInt32, record: CallRecord) async throws(ServiceError) {
        try await deleteAll(uid: target, record: record)
    }

    /// DeleteEnrolledFingersWithOptions(a{sv}): `user` (settled: `target`).
    func deleteAll(
        _ arguments: DeleteEnrolledFingersWithOptionsArguments, target: UInt32,
        record: CallRecord
    ) async throws(ServiceError) {
        try await deleteAll(uid: target, record: record)
    }

    private func deleteAll(uid: UInt32, record: CallRecord) async throws(ServiceError) {
        for finger in FingerName.allCases { try await deleteFromChips(finger, uid: uid, record: record) }
        do {
            let count = try prints.deleteAll(uid: uid)
            Log.info("deleted \(count) print(s) of uid \(uid)")
        } catch {
            throw ServiceError(.storageFailed, "could not delete: \(error)")
        }
    }
}
