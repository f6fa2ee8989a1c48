internal import CGLib
internal import CFprint
import DBusCore
import LocalAuthShared

/// The fingerprint readers, through libfprint: every device that can verify,
/// found by enumeration (FpContext's device list) and hotplug
/// (FpContext::device-added); a reader that is unplugged (FpDevice::removed)
/// stops being offered at once and leaves the list when libfprint drops it
/// (::device-removed). `observe` hears of each change, so BiometryType and
/// preflight follow.
///
/// A reader is *opened only while an operation needs it* (issue 22): a
/// reader is shared with other programs (fprintd and the lock screen open it
/// between Claim and Release, and a USB device is claimed exclusively), so
/// everything that needs no scan (preflight, BiometryType, the enrolled
/// lists, LAEnvironment and its observers) is answered from enumeration and
/// the store. `acquire` opens the reader for one operation, retrying while
/// another program holds it; `relinquish` closes it after a short linger.
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
        /// Match on chip: the prints live on the sensor (FP_DEVICE_FEATURE_STORAGE),
        /// and can be listed and deleted there.
        let storesPrints: Bool
        /// The reader itself refuses a finger it holds already.
        let checksDuplicates: Bool
        /// Built in (under the lid) or external (ReaderPlacement.of).
        var placement: ReaderPlacement = .builtIn
        fileprivate(set) var removed = false
        /// Whether the device is open, or on its way.
        enum DeviceState { case closed, opening, open, closing }
        var state: DeviceState = .closed
        /// Operations holding it now (`acquire` to `relinquish`).
        var holders = 0
        var linger: EventLoop.Timer?
        /// Tasks waiting for `state` or `holders` to change.
        var waiters: [CheckedContinuation<Void, Never>] = []
        var fpDevice: UnsafeMutablePointer<FpDevice> { device.cast() }
        /// Offered to callers: found and not unplugged. Says nothing of open.
        var isUsable: Bool { !removed }
        /// Open and held by an operation: what a scan needs.
        var isHeld: Bool { state == .open && holders > 0 && !removed }

        init(device: GObjectRef, identity: Identity, features: UInt32) {
            self.device = device
            self.identity = identity
            supportsIdentify = features & FP_DEVICE_FEATURE_IDENTIFY.rawValue != 0
            let storage = FP_DEVICE_FEATURE_STORAGE.rawValue | FP_DEVICE_FEATURE_STORAGE_LIST.rawValue
                | FP_DEVICE_FEATURE_STORAGE_DELETE.rawValue
            storesPrints = features & storage == storage
            checksDuplicates = features & FP_DEVICE_FEATURE_DUPLICATES_CHECK.rawValue != 0
        }

        func changed() {
            let waiting = waiters
            waiters = []
            for waiter in waiting { waiter.resume() }
        }

        func waitForChange() async {
            await withCheckedContinuation { waiters.append($0) }
        }
    }

    /// Why `acquire` could not give a reader.
    enum AccessError: Error, Sendable {
        /// Unplugged, or never found.
        case removed
        /// The operation was cancelled while the reader was being opened.
        case cancelled
        /// The system is going to sleep: no reader opens until it resumed.
        case suspended
        /// Another program kept the device until the operation's time limit
        /// (libfprint's last error says how the open failed).
        case heldByAnotherProgram(String)
    }

    private let context: GObjectRef
    private(set) var devices: [Reader] = []
    /// Who hears each change of the set of usable readers (`observe`).
    private var observers: [@ServiceActor () -> Void] = []
    /// How long a reader stays open after its last operation, so that
    /// back-to-back calls do not pay for an open each (`--reader-linger`).
    let lingerSeconds: Double
    /// Between sleep's close and resume: nothing opens.
    var suspended = false

    /// Work that hotplug and the linger ask for, run later by `perform` as a
    /// task of the service's task group (a signal handler cannot await).
    enum Work: Sendable {
        case add(GObjectRef)
        case closeIfIdle(Reader)
    }
    /// Where that work goes: the service's task group.
    let schedule: (@ServiceActor (Work) -> Void)?
    /// `--built-in-reader` / `--external-reader`.
    private let builtInOverrides: [ReaderSelector]
    private let externalOverrides: [ReaderSelector]
    /// The usable readers that sit under the lid.
    var builtIn: Set<Identity> { Set(devices.filter { $0.isUsable && $0.placement == .builtIn }.map(\.identity)) }

    func perform(_ work: Work) async {
        switch work {
        case .add(let device): add(device.cast())
        case .closeIfIdle(let reader): await closeIfIdle(reader)
        }
    }

    init(
        lingerSeconds: Double = ServiceLimits.defaultReaderLinger, builtIn: [ReaderSelector] = [], external: [ReaderSelector] = [],
        schedule: (@ServiceActor (Work) -> Void)? = nil
    ) {
        context = GObjectRef(taking: OpaquePointer(fp_context_new()))
        self.lingerSeconds = lingerSeconds
        builtInOverrides = builtIn
        externalOverrides = external
        self.schedule = schedule
    }

    /// `changed` runs whenever the set of usable readers changes (the reader
    /// choice, fprintd's Devices).
    func observe(_ changed: @escaping @ServiceActor () -> Void) { observers.append(changed) }

    private func changed() { for observer in observers { observer() } }

    /// The readers that can be used now, in the order they were found.
    var usableReaders: [Identity] { devices.filter(\.isUsable).map(\.identity) }
    var isPresent: Bool { devices.contains { $0.isUsable } }
    /// Whether any reader is open now (tests and the log: a preflight opens none).
    var openReaders: [Identity] { devices.filter { $0.state != .closed }.map(\.identity) }

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

    func usable(_ identity: Identity) -> Reader? {
        devices.first { $0.isUsable && $0.identity == identity }
    }

    /// Finds the readers that can verify (opening none); then follows hotplug.
    /// No reader is not an error: the service then answers BiometryNotAvailable.
    func start() {
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
        for device in found { add(device) }
        if devices.isEmpty { Log.info("no fingerprint reader found") }

        // The context and this object live as long as the process: the
        // handlers' reference to self is never released.
        let me = Unmanaged.passRetained(self).toOpaque()
        _ = cfprint_connect_context_device(context.cast(), "device-added", { _, device, data in
            guard let device, let data else { return }
            let manager = Unmanaged<Readers>.fromOpaque(data).takeUnretainedValue()
            let ref = GObjectRef(retaining: OpaquePointer(device))
            ServiceActor.assumeIsolated { manager.schedule?(.add(ref)) }
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

    /// Takes a reader that libfprint found (at start or plugged in). It is
    /// not opened: the first operation that needs it does that.
    private func add(_ device: UnsafeMutablePointer<FpDevice>) {
        guard !devices.contains(where: { $0.device.pointer == OpaquePointer(device) }) else { return }
        let identity = Self.identity(of: device)
        let features = fp_device_get_features(device).rawValue
        guard features & (FP_DEVICE_FEATURE_VERIFY.rawValue | FP_DEVICE_FEATURE_IDENTIFY.rawValue) != 0 else {
            Log.info("reader \(identity) cannot verify; not used")
            return
        }
        let reader = Reader(device: GObjectRef(retaining: OpaquePointer(device)), identity: identity,
                            features: features)
        let place = Self.placement(of: device, identity, builtIn: builtInOverrides, external: externalOverrides)
        reader.placement = place.placement
        devices.append(reader)
        _ = cfprint_connect_device(device, "removed", { device, data in
            guard let device, let data else { return }
            let manager = Unmanaged<Readers>.fromOpaque(data).takeUnretainedValue()
            ServiceActor.assumeIsolated { manager.unplugged(device) }
        }, Unmanaged.passUnretained(self).toOpaque())
        Log.info("reader \(identity) found, \(fp_device_get_nr_enroll_stages(device)) enroll stages, "
                 + (reader.storesPrints ? "prints on the chip, " : "")
                 + "\(reader.placement.rawValue) (\(place.why)); opened only while an operation needs it")
        changed()
    }

    /// Where a reader sits, and why we think so: the override, else the
    /// kernel's `removable` attribute of its USB port, else built in.
    private static func placement(of device: UnsafeMutablePointer<FpDevice>, _ identity: Identity,
                                  builtIn: [ReaderSelector], external: [ReaderSelector])
        -> (placement: ReaderPlacement, why: String) {
        var removable: String?
        var why = "no USB port: counted as built in"
        if let raw = cfprint_usb_platform_id(device) {
            let platformID = String(cString: raw)
            g_free(raw)
            if let name = ReaderPlacement.sysfsName(platformID: platformID) {
                removable = Posix.readFile("/sys/bus/usb/devices/\(name)/removable").map { String(decoding: $0, as: UTF8.self) }
                why = "USB \(name), removable: \(removable?.trimmed ?? "unreadable")"
            } else {
                why = "USB \(platformID): port unknown, counted as built in"
            }
        }
        let placement = ReaderPlacement.of(driver: identity.driver, deviceID: identity.deviceID,
                                                   builtInOverrides: builtIn, externalOverrides: external,
                                                   removable: removable)
        if builtIn.contains(where: { $0.matches(identity.driver, identity.deviceID) })
            || external.contains(where: { $0.matches(identity.driver, identity.deviceID) }) {
            why = "set on the command line"
        }
        return (placement, why)
    }

    /// FpDevice::removed: the reader is gone (and no operation runs on it any more).
    private func unplugged(_ device: UnsafeMutablePointer<FpDevice>) {
        guard let reader = devices.first(where: { $0.device.pointer == OpaquePointer(device) }) else { return }
        let wasUsable = reader.isUsable
        reader.removed = true
        reader.changed()
        Log.info("reader \(reader.identity) was removed")
        if wasUsable { changed() }
        // libfprint drops the device from its context once it is closed.
        if reader.holders == 0 {
            reader.linger?.cancel()
            reader.linger = nil
            schedule?(.closeIfIdle(reader))
        }
    }

    /// FpContext::device-removed: libfprint dropped the device.
    private func dropped(_ device: UnsafeMutablePointer<FpDevice>) {
        let before = isPresent
        devices.removeAll { $0.device.pointer == OpaquePointer(device) }
        if before != isPresent { changed() }
    }

    /// The reader of the operation that just failed with "removed" is gone,
    /// even if libfprint has not said so yet.
    func forget(_ reader: Reader) {
        guard !reader.removed else { return }
        reader.removed = true
        reader.changed()
        changed()
    }

    static func noReader(_ identity: Identity?) -> GLibError {
        GLibError(domain: cfprint_device_error_quark(), code: Int32(FP_DEVICE_ERROR_REMOVED.rawValue),
                  message: identity.map { "reader \($0) is not available" } ?? "no reader")
    }
}
