import DBusCore
import LocalAuthShared

/// A Device's prints: ListEnrolledFingers and the deletes (fprintd's
/// DeleteEnrolledFingers, DeleteEnrolledFingers2, DeleteEnrolledFinger), from
/// both layouts and, on a reader that keeps prints, from its chip.
extension FprintdDevice {
    func listEnrolledFingers(_ request: Request) throws(ServiceError) -> [DBusValue] {
        let fingers = seams.prints(of: request.target, on: identity).map(\.finger.rawValue)
        guard !fingers.isEmpty else { throw ServiceError(.notEnrolled, "Failed to discover prints") }
        return [.strings(fingers)]
    }

    func deleteEnrolledFingers(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        guard operation == nil else { throw ServiceError(.busy, "Another operation is already in progress") }
        try await delete(nil, uid: request.target, record: request.record)
        return []
    }

    func deleteEnrolledFingers2(_ request: Request) async throws(ServiceError) -> [DBusValue] {
        let claim = try currentClaim(request.sender)
        guard operation == nil else { throw ServiceError(.busy, "Another operation is already in progress") }
        try await delete(nil, uid: claim.uid, record: request.record)
        return []
    }

    func deleteEnrolledFinger(_ call: Call<FingerNameArgument>) async throws(ServiceError) -> [DBusValue] {
        let request = call.request
        let claim = try currentClaim(request.sender)
        guard let finger = FingerName(rawValue: call.arguments.name) else {
            throw ServiceError(.invalidArgs, "Invalid finger name")
        }
        guard operation == nil else { throw ServiceError(.busy, "Another operation is already in progress") }
        try await delete(finger, uid: claim.uid, record: request.record)
        return []
    }

    /// The user's prints (one finger, or all) made on this reader, from both
    /// layouts: one print is one print, wherever it was enrolled.
    private func doomed(_ finger: FingerName?, uid: UInt32) throws(ServiceError) -> [EnrolledPrint] {
        let doomed = seams.allPrints(of: uid, on: identity).filter { finger == nil || $0.finger == finger }
        guard !doomed.isEmpty else {
            throw ServiceError(
                .notEnrolled,
                finger.map { "Fingerprint for finger \($0.rawValue) is not enrolled" }
                    ?? "No fingerprint enrolled")
        }
        return doomed
    }

    /// Deletes outside an operation: on a reader that keeps prints on its
    /// chip, the reader is taken for the delete as LocalAuth's delete takes it
    /// (`ReaderGate.withReader`: a turn in the queue, opened, given back),
    /// and each print leaves the chip before its file goes.
    private func delete(_ finger: FingerName?, uid: UInt32, record: CallRecord) async throws(ServiceError) {
        let doomed = try doomed(finger, uid: uid)
        guard reader.storesPrints else { return try removeFiles(doomed, finger: finger, uid: uid) }
        try await seams.gate.withReader(
            identity, for: record, uid: uid,
            { session throws(ServiceError) in
                try await delete(finger, uid: uid, on: session)
            }, failedToOpen: { ServiceError(.readerPrintNotDeleted, "Failed to delete fingerprint from the reader: \($0.message)") })
    }

    /// Deletes with this reader held: from its chip first if it keeps prints
    /// (a file never goes while its slot stays taken), then the files.
    func delete(_ finger: FingerName?, uid: UInt32, on session: any ReaderSession) async throws(ServiceError) {
        let doomed = try doomed(finger, uid: uid)
        if reader.storesPrints {
            for stored in doomed {
                do throws(GLibError) {
                    try await session.deleteFromChip(stored.template)
                } catch {
                    _ = session.failure(error)
                    throw ServiceError(.readerPrintNotDeleted, "Failed to delete fingerprint from the reader: \(error.message)")
                }
                Log.info("fprintd device \(id): deleted \(stored.finger.rawValue) of uid \(uid) from the chip of \(identity)")
            }
        }
        try removeFiles(doomed, finger: finger, uid: uid)
    }

    /// As fprintd's delete_enrolled_fingers: every print is tried, and one
    /// whose file stays is PrintsNotDeleted in fprintd's words (the first such).
    private func removeFiles(_ doomed: [EnrolledPrint], finger: FingerName?, uid: UInt32) throws(ServiceError) {
        // The user's LAEnvironment subscribers hear it.
        defer { seams.userChanged(uid) }
        var failure: ServiceError?
        for stored in doomed {
            do {
                try seams.remove(stored)
            } catch {
                Log.error("fprintd device \(id): could not delete \(stored.location): \(error)")
                failure = failure ?? ServiceError(.storageFailed, "Impossible to delete fingerprint reference got error: \(error)")
            }
        }
        if let failure { throw failure }
        Log.info("fprintd device \(id): deleted \(finger?.rawValue ?? "every finger") of uid \(uid) on \(identity)")
    }
}
