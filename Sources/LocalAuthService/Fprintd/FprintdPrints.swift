import Glibc
import LocalAuthShared

/// One set of prints (docs/FPRINTD.md): with `--fprintd`, every print is
/// written in fprintd's layout, `<fprintd store>/<user>/<driver>/<device-id>/<finger hex digit>`,
/// libfprint's serialized print byte for byte, so fprintd finds it after a
/// switch back; reading keeps PrintStore's checks (root's regular file, not
/// group- or world-writable, the print saying the user, reader and finger its
/// path says). Our writes are atomic, directories 0700, files 0600.
extension PrintStore {
    struct LayoutError: Error, CustomStringConvertible {
        let description: String
    }

    /// Where fprintd keeps `finger` of `username` made on `reader`, if the
    /// names are safe path components (fprintd does not escape them; we
    /// refuse what would need it).
    func fprintdPath(username: String, reader: Readers.Identity, finger: FingerName) -> String? {
        for component in [username, reader.driver, reader.deviceID] where Escape.component(component) != component {
            return nil
        }
        return "\(fprintdRoot)/\(username)/\(reader.driver)/\(reader.deviceID)/\(String(finger.fpFinger, radix: 16))"
    }

    /// Writes a freshly enrolled print in fprintd's layout, and removes the
    /// same finger's print from our own layout, so that one print remains.
    func saveInFprintdLayout(_ print: GObjectRef, finger: FingerName, username: String, uid: UInt32,
                             reader: Readers.Identity) throws {
        try saveInFprintdLayout(bytes: try PrintCodec.serialize(print), finger: finger, username: username, uid: uid, reader: reader)
    }

    func saveInFprintdLayout(bytes: [UInt8], finger: FingerName, username: String, uid: UInt32,
                             reader: Readers.Identity) throws {
        guard let path = fprintdPath(username: username, reader: reader, finger: finger) else {
            throw LayoutError(description: "\(username) on \(reader) cannot be a path in fprintd's store")
        }
        try AtomicFile.makeDirectory(fprintdRoot)
        try AtomicFile.makeDirectories(Posix.directory(of: path), below: fprintdRoot)
        try AtomicFile.write(bytes, to: path)
        let own = "\(root)/\(uid)/\(Escape.component(reader.driver))/\(Escape.component(reader.deviceID))/\(finger.rawValue)"
        var info = stat()
        if lstat(own, &info) == 0 { try AtomicFile.remove(own) }
    }

    /// Deletes `finger` of `uid` from fprintd's layout on every reader; true if one was there.
    func deleteFromFprintdLayout(_ finger: FingerName, uid: UInt32) throws -> Bool {
        var deleted = false
        for stored in allPrints(of: uid) where stored.source == .fprintd && stored.finger == finger {
            try removeFromFprintdLayout(stored.path)
            deleted = true
        }
        return deleted
    }

    /// Removes the print at `path` in fprintd's layout, then each directory
    /// it leaves empty, the reader's, the driver's and the user's (never the
    /// store itself), as fprintd's file storage leaves the store
    /// (file_storage_print_data_delete): a user whose last print went has no
    /// directory there.
    func removeFromFprintdLayout(_ path: String) throws {
        guard path.hasPrefix(fprintdRoot + "/") else { throw LayoutError(description: "\(path) is not in fprintd's store") }
        try AtomicFile.remove(path)
        var directory = Posix.directory(of: path)
        var pruned = false
        // rmdir removes only an empty directory: one that holds another print stays, and all above it.
        while directory.hasPrefix(fprintdRoot + "/"), rmdir(directory) == 0 {
            pruned = true
            directory = Posix.directory(of: directory)
        }
        // The print's removal is durable already; a lost rmdir leaves an empty directory, nothing worse.
        if pruned { try? AtomicFile.syncDirectory(directory) }
    }

    /// At start with `--fprintd`: our own prints move into fprintd's layout
    /// (each checked as on every read).
    /// Afterwards fprintd, if the machine switches back, has every print.
    func moveOwnPrintsToFprintdLayout() {
        for uid in (Posix.listDirectory(root) ?? []).compactMap({ UInt32($0) }).sorted() {
            guard let username = Users.name(of: uid) else { continue }
            // Ours is what the reader was offered (it shadows fprintd's for its finger): it wins.
            for own in allPrints(of: uid) where own.source == .localauth {
                do {
                    try saveInFprintdLayout(bytes: own.bytes, finger: own.finger, username: username, uid: uid, reader: own.reader)
                    Log.info("print \(own.path) moved to fprintd's layout under \(fprintdRoot)")
                } catch {
                    Log.error("could not move \(own.path) to fprintd's layout: \(error); it stays where it is")
                }
            }
        }
    }
}
