/// Log lines on stderr with journald's priority prefixes (`<3>` error,
/// `<4>` warning, `<6>` info, `<7>` debug): one line per event. Never pass
/// biometric data or secrets here.
package enum Log {
    package static func error(_ message: String) { write(3, message) }
    package static func warning(_ message: String) { write(4, message) }
    package static func notice(_ message: String) { write(5, message) }
    package static func info(_ message: String) { write(6, message) }

    private static func write(_ priority: Int, _ message: String) {
        let oneLine = String(message.map { $0 == "\n" ? " " : $0 })
        Posix.writeError("<\(priority)>" + oneLine + "\n")
    }
}
