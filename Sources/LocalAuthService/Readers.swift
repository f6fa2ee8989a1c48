internal import CGLib
internal import CFprint

/// The fingerprint readers, through libfprint: every device that can verify,
/// opened at start and whenever one is plugged in (FpContext::device-added);
/// a reader that is unplugged (FpDevice::removed) stops being offered at once,
/// is closed, and leaves the list when libfprint drops it (::device-removed).
/// `onChange` hears of each change, so BiometryType and preflight follow.
///
/// All of libfprint's callbacks arrive on the service's loop thread, where this
/// class lives. One operation runs at a time; `SensorQueue` orders the callers.
@ServiceActor
final class Readers {
    /// Identifies a reader, and the prints made on it (libfprint's driver and device id).
    struct Identity: Sendable, Hashable, CustomStringConvertible {
        let driver: String
        let deviceID: String
        var description: String { "\(driver)/\(deviceID)" }
    }

    /// One reader libfprint found.
    @ServiceActor
    final class Reader {
        let device: GObjectRef
        let identity: Identity
        let supportsIdentify: Bool
        /// Built in (under the lid) or external (EnvironmentRules.placement).
        var placement: EnvironmentRules.Placement = .builtIn
        fileprivate(set) var isOpen = false
        fileprivate(set) var removed = false
        var fpDevice: UnsafeMutablePointer<FpDevice> { device.cast() }
        var isUsable: Bool { isOpen && !removed }

        init(device: GObjectRef, identity: Identity, supportsIdentify: Bool) {
            self.device = device
            self.identity = identity
            self.supportsIdentify = supportsIdentify
        }
    }

    private let context: GObjectRef
    private(set) var devices: [Reader] = []
    /// The reader running the current operation.
    private var active: Reader?
    /// Called whenever the set of usable readers changes.
    var onChange: (@ServiceActor () -> Void)?

    /// Work that hotplug asks for, run later by `perform` as a task of the
    /// service's task group (a signal handler cannot await).
    enum Work: Sendable {
        case open(GObjectRef)
        case close(Reader)
    }
    /// Where hotplug's work goes: the service's task group.
    var schedule: (@ServiceActor (Work) -> Void)?
    /// `--built-in-reader` / `--external-reader`.
    var builtInOverrides: [ReaderSelector] = []
    var externalOverrides: [ReaderSelector] = []
    /// The usable readers that sit under the lid.
    var builtIn: Set<Identity> { Set(devices.filter { $0.isUsable && $0.placement == .builtIn }.map(\.identity)) }

    func perform(_ work: Work) async {
        switch work {
        case .open(let device): await add(device.cast())
        case .close(let reader): await close(reader)
        }
    }

    init() {
        context = GObjectRef(taking: OpaquePointer(fp_context_new()))
    }

    /// The readers that can be used now, in the order they were found.
    var usableReaders: [Identity] { devices.filter(\.isUsable).map(\.identity) }
    var isPresent: Bool { devices.contains { $0.isUsable } }

    /// The reader's current number of enroll stages (a device may change it).
    func enrollStages(on identity: Identity) -> Int {
        guard let reader = usable(identity) else { return 0 }
        return Int(fp_device_get_nr_enroll_stages(reader.fpDevice))
    }

    /// Whether the reader is warm or hot in libfprint's thermal model: the
    /// time it may still be used is limited (a hot reader refuses to scan).
    func isWarm(_ identity: Identity) -> Bool {
        guard let reader = usable(identity) else { return false }
        return fp_device_get_temperature(reader.fpDevice).rawValue >= FP_TEMPERATURE_WARM.rawValue
    }

    private func usable(_ identity: Identity) -> Reader? {
        devices.first { $0.isUsable && $0.identity == identity }
    }

    /// Finds the readers that can verify and opens them; then follows hotplug.
    /// No reader is not an error: the service then answers BiometryNotAvailable.
    func start() async {
        // Enumerates, iterating the loop until every device is probed.
        var found: [UnsafeMutablePointer<FpDevice>] = []
        if let devices = fp_context_get_devices(context.cast()) {
            for index in 0..<devices.pointee.len {
                guard let raw = cfprint_ptr_array_index(devices, index) else { continue }
                found.append(raw.assumingMemoryBound(to: FpDevice.self))
            }
        }
        // A stable order, whatever order probing finished in.
        found.sort { Self.identity(of: $0).description < Self.identity(of: $1).description }
        for device in found { await add(device) }
        if devices.isEmpty { Log.info("no fingerprint reader found") }

        // The context and this object live as long as the process: the
        // handlers' reference to self is never released.
        let me = Unmanaged.passRetained(self).toOpaque()
        _ = cfprint_connect_context_device(context.cast(), "device-added", { _, device, data in
            guard let device, let data else { return }
            let manager = Unmanaged<Readers>.fromOpaque(data).takeUnretainedValue()
            let ref = GObjectRef(retaining: OpaquePointer(device))
            ServiceActor.assumeIsolated { manager.schedule?(.open(ref)) }
        }, me)
        _ = cfprint_connect_context_device(context.cast(), "device-removed", { _, device, data in
            guard let device, let data else { return }
            let manager = Unmanaged<Readers>.fromOpaque(data).takeUnretainedValue()
            ServiceActor.assumeIsolated { manager.dropped(device) }
        }, me)
    }

    private static func identity(of device: UnsafeMutablePointer<FpDevice>) -> Identity {
        Identity(driver: fp_device_get_driver(device).map { String(cString: $0) } ?? "",
                 deviceID: fp_device_get_device_id(device).map { String(cString: $0) } ?? "")
    }

    /// Takes a reader that libfprint found (at start or plugged in) and opens it.
    private func add(_ device: UnsafeMutablePointer<FpDevice>) async {
        guard !devices.contains(where: { $0.device.pointer == OpaquePointer(device) }) else { return }
        let identity = Self.identity(of: device)
        let features = fp_device_get_features(device).rawValue
        guard features & (FP_DEVICE_FEATURE_VERIFY.rawValue | FP_DEVICE_FEATURE_IDENTIFY.rawValue) != 0 else {
            Log.info("reader \(identity) cannot verify; not used")
            return
        }
        let reader = Reader(device: GObjectRef(retaining: OpaquePointer(device)), identity: identity,
                            supportsIdentify: features & FP_DEVICE_FEATURE_IDENTIFY.rawValue != 0)
        let place = Self.placement(of: device, identity, builtIn: builtInOverrides, external: externalOverrides)
        reader.placement = place.placement
        devices.append(reader)
        _ = cfprint_connect_device(device, "removed", { device, data in
            guard let device, let data else { return }
            let manager = Unmanaged<Readers>.fromOpaque(data).takeUnretainedValue()
            ServiceActor.assumeIsolated { manager.unplugged(device) }
        }, Unmanaged.passUnretained(self).toOpaque())
        do {
            try await open(device)
            reader.isOpen = true
            Log.info("reader \(identity) open, \(fp_device_get_nr_enroll_stages(device)) enroll stages, "
                     + "\(reader.placement.rawValue) (\(place.why))")
            onChange?()
        } catch {
            Log.error("could not open reader \(identity): \(error)")
        }
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

    /// Where a reader sits, and why we think so: the override, else the
    /// kernel's `removable` attribute of its USB port, else built in.
    private static func placement(of device: UnsafeMutablePointer<FpDevice>, _ identity: Identity,
                                  builtIn: [ReaderSelector], external: [ReaderSelector])
        -> (placement: EnvironmentRules.Placement, why: String) {
        var removable: String?
        var why = "no USB port: counted as built in"
        if let raw = cfprint_usb_platform_id(device) {
            let platformID = String(cString: raw)
            g_free(raw)
            if let name = EnvironmentRules.sysfsName(platformID: platformID) {
                removable = Posix.readFile("/sys/bus/usb/devices/\(name)/removable").map { String(decoding: $0, as: UTF8.self) }
                why = "USB \(name), removable: \(removable?.trimmed ?? "unreadable")"
            } else {
                why = "USB \(platformID): port unknown, counted as built in"
            }
        }
        let placement = EnvironmentRules.placement(driver: identity.driver, deviceID: identity.deviceID,
                                                   builtInOverrides: builtIn, externalOverrides: external,
                                                   removable: removable)
        if builtIn.contains(where: { $0.matches(identity.driver, identity.deviceID) })
            || external.contains(where: { $0.matches(identity.driver, identity.deviceID) }) {
            why = "set on the command line"
        }
        return (placement, why)
    }

    /// Opens a reader that was closed (for sleep), trying `attempts` times a
    /// second apart; true once open. A reader that stays closed is logged and
    /// simply not usable (BiometryNotAvailable), so nobody waits on it.
    private func reopen(_ reader: Reader, attempts: Int) async -> Bool {
        let device = reader.fpDevice
        for attempt in 1...attempts {
            guard !reader.removed, !reader.isOpen else { return reader.isOpen }
            do {
                try await open(device)
                reader.isOpen = true
                Log.info("reader \(reader.identity) open again")
                return true
            } catch {
                Log.warning("reader \(reader.identity) did not open after resume (attempt \(attempt) of \(attempts)): \(error)")
                if attempt < attempts { await Self.pause(1) }
            }
        }
        Log.error("reader \(reader.identity) did not come back after resume; it is not available")
        return false
    }

    private static func pause(_ seconds: Double) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            _ = EventLoopTimers.after(seconds) { continuation.resume() }
        }
    }

    /// Before sleep: closes every open reader. A reader still finishing a
    /// cancelled operation answers "busy": it is closed once that ended (at
    /// most about 2 s later).
    func closeForSleep() async {
        for reader in devices where reader.isOpen {
            for _ in 0..<40 {
                guard active == nil || active !== reader else {
                    await Self.pause(0.05)
                    continue
                }
                break
            }
            await close(reader)
        }
        onChange?()
    }

    /// After resume: opens again the readers closed for sleep.
    func reopenAfterSleep(attempts: Int = 3) async {
        for reader in devices where !reader.isOpen && !reader.removed {
            _ = await reopen(reader, attempts: attempts)
        }
        onChange?()
    }

    /// FpDevice::removed: the reader is gone (and no operation runs on it any more).
    private func unplugged(_ device: UnsafeMutablePointer<FpDevice>) {
        guard let reader = devices.first(where: { $0.device.pointer == OpaquePointer(device) }) else { return }
        let wasUsable = reader.isUsable
        reader.removed = true
        Log.info("reader \(reader.identity) was removed")
        if wasUsable { onChange?() }
        // libfprint drops the device from its context once it is closed.
        if reader.isOpen { schedule?(.close(reader)) }
    }

    /// FpContext::device-removed: libfprint dropped the device.
    private func dropped(_ device: UnsafeMutablePointer<FpDevice>) {
        let before = isPresent
        devices.removeAll { $0.device.pointer == OpaquePointer(device) }
        if before != isPresent { onChange?() }
    }

    private func close(_ reader: Reader) async {
        guard reader.isOpen else { return }
        reader.isOpen = false
        let device = reader.fpDevice
        _ = try? await glibAsync({ callback, data in fp_device_close(device, nil, callback, data) },
                                 finish: { result -> Result<Bool, GLibError> in
            Result { () throws(GLibError) in
                try GLibError.check { fp_device_close_finish(device, result, $0) } != 0
            }
        })
    }

    /// Closes the readers (at shutdown).
    func stop() async {
        for reader in devices { await close(reader) }
    }

    /// The reader of the operation that just failed with "removed" is gone,
    /// even if libfprint has not said so yet.
    func forget() {
        guard let active, !active.removed else { return }
        active.removed = true
        onChange?()
    }

    private static func noReader(_ identity: Identity?) -> GLibError {
        GLibError(domain: cfprint_device_error_quark(), code: Int32(FP_DEVICE_ERROR_REMOVED.rawValue),
                  message: identity.map { "reader \($0) is not available" } ?? "no reader")
    }

    // MARK: Matching

    enum ScanResult: Sendable {
        case match(GObjectRef)
        case noMatch
        case retry(RetryKind)
    }

    /// One scan against `prints`: a match, no match, or a scan to repeat.
    /// Throws libfprint's error (cancelled, removed, too hot, …).
    /// The prints say which reader scans (all are made on the same one), or
    /// `on` does (fprintd's duplicate check identifies over a gallery that may be empty).
    func identify(_ prints: [GObjectRef], on identity: Identity? = nil,
                  cancellable: Cancellable) async throws(GLibError) -> ScanResult {
        let wanted = identity ?? prints.first.map { Identity(driver: PrintCodec.driver(of: $0), deviceID: PrintCodec.deviceID(of: $0)) }
        guard let wanted, let reader = usable(wanted) else { throw Self.noReader(wanted) }
        guard reader.supportsIdentify || !prints.isEmpty else { return .noMatch }
        let fpDevice = reader.fpDevice
        active = reader
        defer { active = nil }
        let gallery = g_ptr_array_new()!
        for print in prints { g_ptr_array_add(gallery, UnsafeMutableRawPointer(print.pointer)) }
        defer { g_ptr_array_unref(gallery) }
        let identify = reader.supportsIdentify
        let single = prints.first
        // libfprint reports the match result through this callback as soon as
        // the scan is judged, before the operation completes; a Cancel that
        // lands in between makes the completion say only "cancelled". A
        // judged no-match must still count toward the lockout, so it is
        // remembered here (docs/SECURITY.md).
        let report = Unmanaged.passRetained(MatchReport()).toOpaque()
        let matchCallback: FpMatchCb = { _, match, _, userData, error in
            let box = Unmanaged<MatchReport>.fromOpaque(userData!).takeUnretainedValue()
            if error == nil && match == nil { box.judgedNoMatch = true }
        }
        let releaseReport: GDestroyNotify = { Unmanaged<MatchReport>.fromOpaque($0!).release() }
        let judged = Unmanaged<MatchReport>.fromOpaque(report).takeUnretainedValue()

        return try await glibAsync({ callback, data in
            if identify {
                fp_device_identify(fpDevice, gallery, cancellable.raw, matchCallback, report, releaseReport, callback, data)
            } else {
                fp_device_verify(fpDevice, single!.pointer, cancellable.raw, matchCallback, report, releaseReport,
                                 callback, data)
            }
        }, finish: { result -> Result<ScanResult, GLibError> in
            var error: UnsafeMutablePointer<GError>? = nil
            if identify {
                var match: OpaquePointer? = nil
                _ = fp_device_identify_finish(fpDevice, result, &match, nil, &error)
                if error != nil {
                    let failure = GLibError.take(error)
                    if failure.isCancelled && judged.judgedNoMatch { return .success(.noMatch) }
                    return failure.isRetry ? .success(.retry(failure.retryKind)) : .failure(failure)
                }
                if let match { return .success(.match(GObjectRef(taking: match))) }
                return .success(.noMatch)
            } else {
                var matched: gboolean = 0
                _ = fp_device_verify_finish(fpDevice, result, &matched, nil, &error)
                if error != nil {
                    let failure = GLibError.take(error)
                    if failure.isCancelled && judged.judgedNoMatch { return .success(.noMatch) }
                    return failure.isRetry ? .success(.retry(failure.retryKind)) : .failure(failure)
                }
                return .success(matched != 0 ? .match(single!) : .noMatch)
            }
        })
    }

    // MARK: Enrolling

    /// Enrolls `finger` for `username` on `identity`; `progress` sees each stage and retry.
    func enroll(finger: UInt32, username: String, on identity: Identity, cancellable: Cancellable,
                progress: @escaping @ServiceActor (Int, RetryKind?) -> Void) async throws(GLibError) -> GObjectRef {
        guard let reader = usable(identity) else { throw Self.noReader(identity) }
        let fpDevice = reader.fpDevice
        active = reader
        defer { active = nil }
        let template = fp_print_new(fpDevice)!
        fp_print_set_finger(template, FpFinger(rawValue: finger))
        fp_print_set_username(template, username)
        let enrollDate = g_date_new()!
        g_date_set_time_t(enrollDate, time(nil))
        fp_print_set_enroll_date(template, enrollDate)
        g_date_free(enrollDate)

        let progressBox = Unmanaged.passRetained(ProgressBox(progress)).toOpaque()
        return try await glibAsync({ callback, data in
            fp_device_enroll(fpDevice, template, cancellable.raw, { _, stages, _, userData, error in
                let box = Unmanaged<ProgressBox>.fromOpaque(userData!).takeUnretainedValue()
                let retry: RetryKind? = error.map { GLibError(domain: $0.pointee.domain, code: $0.pointee.code, message: "").retryKind }
                ServiceActor.assumeIsolated { box.report(Int(stages), retry) }
            }, progressBox, { Unmanaged<ProgressBox>.fromOpaque($0!).release() }, callback, data)
        }, finish: { result -> Result<GObjectRef, GLibError> in
            var error: UnsafeMutablePointer<GError>? = nil
            let print = fp_device_enroll_finish(fpDevice, result, &error)
            if error != nil { return .failure(GLibError.take(error)) }
            guard let print else {
                return .failure(GLibError(domain: 0, code: 0, message: "the reader finished enrolling without a print"))
            }
            return .success(GObjectRef(taking: print))
        })
    }
}

/// What libfprint's match callback said about the scan in progress.
private final class MatchReport {
    var judgedNoMatch = false
}

private final class ProgressBox {
    let report: @ServiceActor (Int, RetryKind?) -> Void
    init(_ report: @escaping @ServiceActor (Int, RetryKind?) -> Void) { self.report = report }
}

/// Serialized prints: libfprint's own format, which also carries the driver,
/// device id, finger and username it was made with.
enum PrintCodec {
    static func serialize(_ print: GObjectRef) throws(GLibError) -> [UInt8] {
        var data: UnsafeMutablePointer<guchar>? = nil
        var length: gsize = 0
        _ = try GLibError.check { fp_print_serialize(print.pointer, &data, &length, $0) }
        guard let data else { return [] }
        defer { g_free(data) }
        return Array(UnsafeBufferPointer(start: data, count: Int(length)))
    }

    /// The same bytes always give the same print, so a print read before is
    /// taken from `PrintCache` (libfprint's parser is most of a preflight's cost).
    static func deserialize(_ bytes: [UInt8]) throws(GLibError) -> GObjectRef {
        if let cached = PrintCache.shared.print(for: bytes) { return cached }
        let print = try GLibError.check { error in
            bytes.withUnsafeBufferPointer { fp_print_deserialize($0.baseAddress, gsize($0.count), error) }
        }
        guard let print else { throw GLibError(domain: 0, code: 0, message: "not a print") }
        let reference = GObjectRef(taking: print)
        PrintCache.shared.store(reference, for: bytes)
        return reference
    }

    static func driver(of print: GObjectRef) -> String {
        fp_print_get_driver(print.pointer).map { String(cString: $0) } ?? ""
    }
    static func deviceID(of print: GObjectRef) -> String {
        fp_print_get_device_id(print.pointer).map { String(cString: $0) } ?? ""
    }
    static func finger(of print: GObjectRef) -> UInt32 {
        fp_print_get_finger(print.pointer).rawValue
    }
    static func username(of print: GObjectRef) -> String? {
        fp_print_get_username(print.pointer).map { String(cString: $0) }
    }
    /// The enroll date (a day) as Unix seconds at midnight UTC, if set.
    static func enrollDate(of print: GObjectRef) -> Int64? {
        guard let date = fp_print_get_enroll_date(print.pointer), g_date_valid(date) != 0 else { return nil }
        let epoch = g_date_new_dmy(1, G_DATE_JANUARY, 1970)!
        defer { g_date_free(epoch) }
        return (Int64(g_date_get_julian(date)) - Int64(g_date_get_julian(epoch))) * 86_400
    }
}
