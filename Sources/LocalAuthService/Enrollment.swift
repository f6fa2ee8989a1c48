import DBusCore
import LocalAuthShared

// Enrollment, listing and deletion of prints, and the domain state that
// changes with them.
extension LocalAuthService {
    // MARK: Domain state

    func domainState(_ request: Request) throws(DBusError) -> [DBusValue] {
        guard sensor.isPresent, let identity = sensor.identity else { throw ServiceErrors.noReader }
        var material = Array("\(identity.driver)/\(identity.deviceID)".utf8)
        for stored in prints.prints(of: request.uid, for: identity) {
            material += Array("\n\(stored.finger.rawValue)\n".utf8) + stored.bytes
        }
        return [.bytes(Checksum.sha256(material))]
    }

    // MARK: Enrollment

    static func finger(_ value: DBusValue) throws(DBusError) -> FingerName {
        guard let name = value.string, let finger = FingerName(rawValue: name) else {
            throw ServiceErrors.invalidArgs("unknown finger \(value.string ?? "?"); use one of "
                + FingerName.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return finger
    }

    func enroll(_ request: Request) async throws(DBusError) -> [DBusValue] {
        let finger = try Self.finger(request.arguments[0])
        guard sensor.isPresent, let identity = sensor.identity else { throw ServiceErrors.noReader }
        guard !prints.prints(of: request.uid, for: identity).contains(where: { $0.finger == finger }) else {
            throw ServiceErrors.named(LocalAuthServiceError.alreadyEnrolled, "\(finger.rawValue) is already enrolled")
        }
        guard enrollments[request.sender] == nil else {
            throw ServiceErrors.named(LocalAuthServiceError.busy, "this caller is already enrolling")
        }
        let cancellable = Cancellable()
        enrollments[request.sender] = cancellable
        defer {
            enrollments[request.sender] = nil
            finishIfStopped()
        }
        let ticket = SensorQueue.Ticket()
        guard await queue.acquire(ticket) else { throw ServiceErrors.la(.systemCancel, "cancelled") }
        defer { queue.release() }
        if cancellable.isCancelled { throw ServiceErrors.la(.systemCancel, "enrollment cancelled") }

        let stages = UInt32(sensor.enrollStages)
        let sender = request.sender
        let timeout = EventLoopTimers.after(configuration.scanTimeout * 2) { cancellable.cancel() }
        defer { timeout.cancel() }
        do {
            let print = try await sensor.enroll(finger: finger.fpFinger, username: String(request.uid),
                                                cancellable: cancellable) { [weak self] stage, retry in
                let progress: EnrollProgress = retry.map(\.enrollProgress) ?? .stagePassed
                self?.enrollStatus(sender, progress, UInt32(stage), stages)
            }
            // The reader or prints may have changed while the person scanned.
            guard sensor.identity == identity else { throw ServiceErrors.noReader }
            do {
                try prints.save(print, finger: finger, uid: request.uid)
            } catch {
                enrollStatus(sender, .failed, 0, stages)
                throw ServiceErrors.named(LocalAuthServiceError.storageFailed, "could not store the print: \(error)")
            }
            enrollStatus(sender, .completed, stages, stages)
            Log.info("enrolled \(finger.rawValue) for uid \(request.uid)")
            return []
        } catch let error as DBusError {
            throw error
        } catch {
            let failure = error as! GLibError
            enrollStatus(sender, failure.isDevice(FP_DEVICE_ERROR_DATA_FULL_VALUE) ? .dataFull
                         : failure.isDevice(FP_DEVICE_ERROR_DATA_DUPLICATE_VALUE) ? .duplicate : .failed, 0, stages)
            if failure.isCancelled { throw ServiceErrors.la(.systemCancel, "enrollment cancelled") }
            throw ServiceErrors.la(.systemCancel, "enrollment failed: \(failure.message)")
        }
    }

    func enrollStatus(_ destination: String, _ progress: EnrollProgress, _ stage: UInt32, _ stages: UInt32) {
        try? bus.emit(path: ObjectPath(stringLiteral: LocalAuthBus.objectPath), interface: LocalAuthBus.interface,
                      member: LocalAuthBus.Signal.enrollStatus,
                      arguments: [.string(progress.rawValue), .uint32(stage), .uint32(stages)],
                      destination: destination)
    }

    func listEnrolledFingers(_ request: Request) throws(DBusError) -> [DBusValue] {
        guard sensor.isPresent, let identity = sensor.identity else { throw ServiceErrors.noReader }
        return [.strings(prints.prints(of: request.uid, for: identity).map(\.finger.rawValue))]
    }

    func deleteEnrolledFinger(_ request: Request) throws(DBusError) -> [DBusValue] {
        let finger = try Self.finger(request.arguments[0])
        do {
            guard try prints.delete(finger, uid: request.uid) else {
                throw ServiceErrors.named(LocalAuthServiceError.notEnrolled, "\(finger.rawValue) is not enrolled")
            }
        } catch let error as DBusError {
            throw error
        } catch {
            throw ServiceErrors.named(LocalAuthServiceError.storageFailed, "could not delete: \(error)")
        }
        return []
    }

    func deleteEnrolledFingers(_ request: Request) throws(DBusError) -> [DBusValue] {
        for finger in FingerName.allCases {
            do {
                _ = try prints.delete(finger, uid: request.uid)
            } catch {
                throw ServiceErrors.named(LocalAuthServiceError.storageFailed, "could not delete: \(error)")
            }
        }
        return []
    }
}
