import LocalAuthShared

/// Enrolled prints, one file per finger: `<state>/prints/<uid>/<finger-name>`,
/// each holding libfprint's serialized print. Directories are 0700 and files
/// 0600 (root only); every write is atomic (see AtomicFile).
@ServiceActor
final class PrintStore {
    private let root: String

    struct StoredPrint {
        let finger: FingerName
        let print: GObjectRef
        let bytes: [UInt8]
    }

    init(stateDirectory: String) {
        root = stateDirectory + "/prints"
    }

    private func directory(of uid: UInt32) -> String { "\(root)/\(uid)" }

    /// The user's prints that were made on `reader`; corrupt or foreign files
    /// are logged by name and skipped so that the others still work.
    func prints(of uid: UInt32, for reader: Sensor.Identity) -> [StoredPrint] {
        let directory = directory(of: uid)
        guard let names = Posix.listDirectory(directory) else { return [] }
        var result: [StoredPrint] = []
        for name in names.sorted() {
            guard let finger = FingerName(rawValue: name) else { continue }   // temporary files, strays
            let path = "\(directory)/\(name)"
            guard let bytes = AtomicFile.read(path) else {
                Log.error("print file \(path) cannot be read; skipped")
                continue
            }
            do {
                let print = try PrintCodec.deserialize(bytes)
                guard PrintCodec.driver(of: print) == reader.driver, PrintCodec.deviceID(of: print) == reader.deviceID else {
                    continue   // made on another reader
                }
                result.append(StoredPrint(finger: finger, print: print, bytes: bytes))
            } catch {
                Log.error("print file \(path) is corrupt (\(error)); skipped")
            }
        }
        return result
    }

    func save(_ print: GObjectRef, finger: FingerName, uid: UInt32) throws {
        let bytes = try PrintCodec.serialize(print)
        try AtomicFile.makeDirectory(directory(of: uid))
        try AtomicFile.write(bytes, to: "\(directory(of: uid))/\(finger.rawValue)")
    }

    func delete(_ finger: FingerName, uid: UInt32) throws -> Bool {
        let path = "\(directory(of: uid))/\(finger.rawValue)"
        guard Posix.exists(path) else { return false }
        try AtomicFile.remove(path)
        return true
    }
}
