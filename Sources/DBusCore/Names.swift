internal import CDBus

/// Checks of D-Bus names before they reach libdbus, which treats an invalid
/// name as a programming error and aborts the process. Every name that goes
/// into a message passes through here, so a bad one becomes InvalidArgs.
enum NameCheck {
    static func busName(_ name: String?) throws(DBusError) {
        guard let name else { return }
        try check(name, "bus name") { dbus_validate_bus_name($0, nil) }
    }

    static func interface(_ name: String?) throws(DBusError) {
        guard let name else { return }
        try check(name, "interface name") { dbus_validate_interface($0, nil) }
    }

    static func member(_ name: String) throws(DBusError) {
        try check(name, "member name") { dbus_validate_member($0, nil) }
    }

    static func errorName(_ name: String) -> Bool {
        !name.utf8.contains(0) && name.withCString { dbus_validate_error_name($0, nil) } != 0
    }

    private static func check(_ name: String, _ what: String,
                              _ validate: (UnsafePointer<CChar>) -> dbus_bool_t) throws(DBusError) {
        guard !name.utf8.contains(0), name.withCString(validate) != 0 else {
            throw DBusError(.invalidArgs, "invalid D-Bus \(what): \(name)")
        }
    }
}
