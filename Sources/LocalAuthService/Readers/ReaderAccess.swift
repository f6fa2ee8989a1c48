internal import CGLib
internal import CFprint
import DBusCore
import LocalAuthShared

// Opening a reader for one operation and closing it after (issue 22): the
// device is open exactly while an operation (or an fprintd claim:
// Fprintd/FprintdDevice.swift) holds it, plus a short linger.
extension Readers {
    // MARK: Opening for one operation

    /// Opens `identity` for one operation and holds it until `relinquish`.
    /// When the device cannot be opened (another program holds it: fprintd,
    /// the lock screen), tries again with a growing pause until `deadline`;
    /// `busy` hears the first such failure (the caller's status). Nothing is
    /// remembered of a failure: the next operation tries afresh.
    func acquire(_ identity: Identity, until deadline: ContinuousClock.Instant, cancellable: Cancellable,
                 busy: @ServiceActor () -> Void) async throws(AccessError) -> Reader {
        var pause = ServiceLimits.readerBusyFirstPause
        var toldBusy = false
        while true {
            guard !suspended else { throw .suspended }
            guard let reader = usable(identity) else { throw .removed }
            if cancellable.isCancelled { throw .cancelled }
            reader.linger?.cancel()
            reader.linger = nil
            switch reader.state {
            case .opening, .closing:
                await reader.waitForChange()
                continue
            case .open:
                reader.holders += 1
                return reader
            case .closed:
                break
            }
            reader.state = .opening
            let started = ContinuousClock.now
            do {
                try await open(reader.fpDevice)
                reader.state = .open
                reader.holders += 1
                reader.changed()
                Log.info("reader \(identity) open (\(Self.milliseconds(since: started)) ms)")
                // Unplugged, or sleep began, while it opened: give it back at once.
                if reader.removed || suspended || cancellable.isCancelled {
                    relinquish(reader)
                    continue
                }
                return reader
            } catch {
                reader.state = .closed
                reader.changed()
                if error.isDevice(FP_DEVICE_ERROR_REMOVED_VALUE) { throw .removed }
                if cancellable.isCancelled { throw .cancelled }
                guard ContinuousClock.now + .milliseconds(Int(pause * 1000)) < deadline else {
                    Log.warning("reader \(identity) stayed in use by another program: \(error.message)")
                    throw .heldByAnotherProgram(error.message)
                }
                if !toldBusy {
                    toldBusy = true
                    Log.notice("reader \(identity) is in use by another program (\(error.message)); trying again")
                    busy()
                }
                await Self.pause(pause, unless: cancellable)
                pause = min(pause * 2, ServiceLimits.readerBusyLongestPause)
            }
        }
    }

    /// The operation that `acquire`d `reader` ended. The last holder leaves
    /// it open for the linger (a back-to-back call pays no second open), then
    /// it closes; at once if it was unplugged or sleep is coming.
    func relinquish(_ reader: Reader) {
        guard reader.holders > 0 else { return }
        reader.holders -= 1
        reader.changed()
        guard reader.holders == 0 else { return }
        reader.linger?.cancel()
        if reader.removed || suspended || lingerSeconds <= 0 {
            reader.linger = nil
            schedule?(.closeIfIdle(reader))
            return
        }
        reader.linger = EventLoopTimers.after(lingerSeconds) { [weak self] in
            reader.linger = nil
            self?.schedule?(.closeIfIdle(reader))
        }
    }

    /// Closes `reader` if no operation holds it and nothing else opens or
    /// closes it. A reader is never marked closed while in use.
    func closeIfIdle(_ reader: Reader) async {
        guard reader.state == .open, reader.holders == 0, reader.linger == nil else { return }
        reader.state = .closing
        reader.changed()
        let device = reader.fpDevice
        _ = try? await glibAsync({ callback, data in fp_device_close(device, nil, callback, data) },
                                 finish: { result -> Result<Bool, GLibError> in
            Result { () throws(GLibError) in
                try GLibError.check { fp_device_close_finish(device, result, $0) } != 0
            }
        })
        reader.state = .closed
        reader.changed()
        Log.info("reader \(reader.identity) closed")
    }

    /// fp_device_open, awaited.
    private func open(_ device: UnsafeMutablePointer<FpDevice>) async throws(GLibError) {
        _ = try await glibAsync({ callback, data in fp_device_open(device, nil, callback, data) },
                                finish: { result -> Result<Bool, GLibError> in
            Result { () throws(GLibError) in
                try GLibError.check { fp_device_open_finish(device, result, $0) } != 0
            }
        })
    }

    private static func pause(_ seconds: Double, unless cancellable: Cancellable) async {
        // In slices, so that a cancelled operation stops waiting at once.
        var left = seconds
        while left > 0, !cancellable.isCancelled {
            let slice = min(left, 0.05)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                _ = EventLoopTimers.after(slice) { continuation.resume() }
            }
            left -= slice
        }
    }

    private static func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let elapsed = ContinuousClock.now - start
        return Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
    }

    // MARK: Sleep and shutdown

    /// Before sleep and at shutdown: nothing opens any more, and once every
    /// operation has given its reader back (sleep ended them), every reader
    /// is closed. Waits as long as an operation holds one: a reader is never
    /// marked closed while in use (logind's InhibitDelayMaxSec bounds the wait).
    func closeAll() async {
        suspended = true
        for reader in devices {
            // Until it is closed: not merely "a close was started" (a close
            // the linger or a relinquish scheduled may be running now).
            while reader.state != .closed {
                reader.linger?.cancel()
                reader.linger = nil
                if reader.holders > 0 || reader.state == .opening || reader.state == .closing {
                    await reader.waitForChange()
                } else {
                    await closeIfIdle(reader)
                }
            }
        }
    }

    /// After resume: readers may open again (on demand, as always).
    func resumeOpening() {
        suspended = false
    }
}
