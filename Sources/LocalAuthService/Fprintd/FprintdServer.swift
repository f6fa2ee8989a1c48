internal import LocalAuthInterface
import DBusCore
import LocalAuthShared

/// `localauthd --fprintd`: fprintd 1.94's `net.reactivated.Fprint` on the
/// same readers, prints and lockout as org.example.LocalAuth (docs/FPRINTD.md).
///
/// This file: the Manager object, one `FprintdDevice` per reader (ids given in
/// the order readers appear, never reused, as fprintd numbers them), and the
/// hooks the service calls (a caller left, stop). Their calls take the same
/// path as org.example.LocalAuth's (`CallRouter`), with fprintd's tables
/// (FprintdContract.swift). FprintdDevice.swift: claims and the methods;
/// FprintdOperation.swift, FprintdOperations.swift: the scans; FprintdPrints.swift: prints in fprintd's layout.
@ServiceActor
final class FprintdServer {
    private let seams: ServiceFprintdWiring
    private let router: CallRouter
    private let bus: BusConnection
    private let scanTimeout: Double
    private let spawn: @ServiceActor (@escaping @Sendable @ServiceActor () async -> Void) -> Void
    private(set) var devices: [FprintdDevice] = []
    /// The libfprint reader behind each Device object (a replugged reader is a new one).
    private var behind: [ObjectIdentifier: Readers.Reader] = [:]
    private var nextID = 0

    nonisolated static let managerXML = Interfaces.fprintdManager
    nonisolated static let deviceXML = Interfaces.fprintdDevice

    init(
        seams: ServiceFprintdWiring, router: CallRouter, bus: BusConnection, scanTimeout: Double,
        events: ServiceEvents, spawn: @escaping @ServiceActor (@escaping @Sendable @ServiceActor () async -> Void) -> Void
    ) {
        self.seams = seams
        self.router = router
        self.bus = bus
        self.scanTimeout = scanTimeout
        self.spawn = spawn
        // Claims keep their reader open: sleep takes it back, resume gives it again.
        events.onSleepChanged { [weak self] sleeping in
            for device in self?.devices ?? [] {
                if sleeping { device.sleepBegan() } else { device.readersOffered() }
            }
        }
    }

    /// Exports the objects, follows the readers, and takes the bus name.
    func start() throws(DBusError) {
        router.export(FprintdBus.managerPath, Self.contract, on: self, bus: bus)
        refreshDevices()
        seams.readers.observe { [weak self] in self?.refreshDevices() }
        switch try bus.requestName(FprintdBus.serviceName) {
        case .primaryOwner, .alreadyOwner: break
        case .taken: throw DBusError(.failed, "\(FprintdBus.serviceName) is owned by another process (is fprintd running?)")
        }
        Log.info("serving \(FprintdBus.serviceName) (fprintd's contract) on \(devices.count) reader(s); "
                 + "prints in fprintd's layout under \(seams.prints.fprintdRoot)")
    }

    /// Whether claims or calls should keep the service from its idle exit.
    var keepsServiceAlive: Bool {
        devices.contains { $0.claim != nil || $0.operation != nil }
    }

    /// One Device object per reader libfprint has (open or not: a reader closed
    /// for sleep keeps its object and its claim, as in fprintd; sleep ends an
    /// operation through its queue ticket, FprintdOperation.swift); a reader that
    /// was unplugged loses its object (an operation on it ends with
    /// verify-/enroll-disconnected), one plugged in gets a new one.
    func refreshDevices() {
        let present = seams.readers.devices.filter(\.isUsable)
        for device in devices where !present.contains(where: { $0 === behind[ObjectIdentifier(device)] }) {
            device.readerGone()
            behind[ObjectIdentifier(device)] = nil
            // Served, listed and kept no more (issue 30 item 9).
            router.unexport(device.path, bus: bus)
        }
        devices.removeAll { $0.isGone }
        for reader in present where !behind.values.contains(where: { $0 === reader }) {
            let device = FprintdDevice(id: nextID, reader: LibfprintFprintdReader(reader), seams: seams,
                                       scanTimeout: scanTimeout, spawn: spawn)
            nextID += 1
            devices.append(device)
            behind[ObjectIdentifier(device)] = reader
            router.export(device.path, FprintdDevice.contract, on: device, bus: bus)
            Log.info("fprintd device \(device.path) is reader \(reader.identity)")
        }
    }

    /// A bus name left: its claims are released and its operations stopped.
    /// The session in front may have changed: idle claims of callers no
    /// longer at the reader end (FprintdDevice.frontChanged).
    func frontChanged() async {
        for device in devices { await device.frontChanged() }
    }

    func senderVanished(_ name: String) {
        for device in devices { device.senderVanished(name) }
    }

    /// SIGTERM: every operation ends now (calls, polkit included, end through the registry).
    func stop() {
        for device in devices { device.stopAll() }
    }

    /// The reader that serves the caller's LAContext evaluations (ReaderChoice.swift),
    /// so that fprintd's clients and apps use the same one.
    func defaultDevice(for uid: UInt32) throws(ServiceError) -> FprintdDevice {
        guard !devices.isEmpty else { throw ServiceError(.la(.biometryNotAvailable), "No devices available") }
        if devices.count > 1, let chosen = seams.readerChoice.reader(for: uid),
           let device = devices.first(where: { $0.identity == chosen }) {
            return device
        }
        return devices[0]
    }
}
