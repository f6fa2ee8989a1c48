import LocalAuthShared

/// Where a reader sits, built in (under the lid) or external: pure rules with unit tests
/// (Tests/LocalAuthServiceTests/EnvironmentRulesTests.swift). Readers.swift
/// places each reader as it comes; the reader choice leaves out the built-in
/// ones while the lid is closed (`ReaderChoice.reachable`).
enum ReaderPlacement: String, Sendable, Equatable {
    case builtIn = "built-in"
    case external

    /// sysfs's name of the USB device on gusb's port path: "usb:01:03:02"
    /// (hex bus, then each port) is "1-3.2". nil if it is not one.
    static func sysfsName(platformID: String) -> String? {
        guard platformID.hasPrefix("usb:") else { return nil }
        let numbers = platformID.dropFirst(4).split(separator: ":").map { UInt8($0, radix: 16) }
        guard numbers.count >= 2, !numbers.contains(nil) else { return nil }
        let values = numbers.map { Int($0!) }
        return "\(values[0])-" + values.dropFirst().map(String.init).joined(separator: ".")
    }

    /// Where a reader sits: an override (`--built-in-reader` /
    /// `--external-reader`) wins; else the kernel's `removable` attribute of
    /// its USB device ("fixed": built in, "removable": external); a reader
    /// the kernel cannot place ("unknown", no USB port such as libfprint's
    /// virtual readers) counts as built in, so that a closed lid refuses it
    /// rather than let a reader under the lid be used.
    static func of(
        driver: String, deviceID: String, builtInOverrides: [ReaderSelector],
        externalOverrides: [ReaderSelector], removable: String?
    ) -> ReaderPlacement {
        if externalOverrides.contains(where: { $0.matches(driver, deviceID) }) { return .external }
        if builtInOverrides.contains(where: { $0.matches(driver, deviceID) }) { return .builtIn }
        switch removable?.trimmed {
        case "removable": return .external
        default: return .builtIn
        }
    }
}
