import DBusCore
import LocalAuthShared

// The arguments of the enrollment methods, decoded and validated once at the
// top of each handler (one struct per method). Whose prints a call is about
// (the `user` option) needs the manage action: Authorization.swift reads it
// with `PrintOptions` before polkit is asked.

/// The options of EnrollWithOptions, ListEnrolledPrints and Delete…WithOptions.
struct PrintOptions {
    /// Another user, by name (nil: the caller).
    var user: String?
    var replace = false

    init(_ value: DBusValue) throws(ServiceError) {
        guard let entries = value.stringKeyedDictionary else { throw ServiceErrors.invalidArgs("options must be a{sv}") }
        for (key, value) in entries {
            switch key {
            case LocalAuthBus.PrintOption.user:
                guard let name = value.string else { throw ServiceErrors.invalidArgs("user must be a string (a user name)") }
                guard !name.isEmpty, name.utf8.count <= 256 else { throw ServiceErrors.invalidArgs("user must be 1 to 256 bytes") }
                user = name
            case LocalAuthBus.PrintOption.replace:
                guard let flag = value.bool else { throw ServiceErrors.invalidArgs("replace must be a boolean") }
                replace = flag
            default:
                continue  // forward compatibility, as for EvaluatePolicy
            }
        }
    }
}

extension FingerName {
    /// A finger named by a caller: one of FingerName's names, else InvalidArgs.
    init(argument value: DBusValue) throws(ServiceError) {
        guard let name = value.string, let finger = FingerName(rawValue: name) else {
            throw ServiceErrors.invalidArgs(
                "unknown finger \(ServiceErrors.echo(value.string ?? "?")); use one of "
                    + FingerName.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self = finger
    }
}

/// Reads `count` arguments or says which signature the method takes.
private func expect(_ arguments: [DBusValue], _ count: Int, _ method: String, _ signature: String) throws(ServiceError) {
    guard arguments.count == count else { throw ServiceErrors.invalidArgs("\(method) takes (\(signature))") }
}

/// Enroll(s finger): the caller's own finger, never replacing.
struct EnrollArguments: CallArguments {
    let finger: FingerName

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        try expect(arguments, 1, "Enroll", "s")
        finger = try FingerName(argument: arguments[0])
    }
}

/// EnrollWithOptions(s finger, a{sv} options): `user`, `replace`.
struct EnrollWithOptionsArguments: CallArguments {
    var namedUser: String? { options.user }
    let finger: FingerName
    let options: PrintOptions

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        try expect(arguments, 2, "EnrollWithOptions", "sa{sv}")
        finger = try FingerName(argument: arguments[0])
        options = try PrintOptions(arguments[1])
    }
}

/// ListEnrolledPrints(a{sv} options): `user`.
struct ListEnrolledPrintsArguments: CallArguments {
    var namedUser: String? { options.user }
    let options: PrintOptions

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        try expect(arguments, 1, "ListEnrolledPrints", "a{sv}")
        options = try PrintOptions(arguments[0])
    }
}

/// DeleteEnrolledFinger(s finger).
struct DeleteEnrolledFingerArguments: CallArguments {
    let finger: FingerName

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        try expect(arguments, 1, "DeleteEnrolledFinger", "s")
        finger = try FingerName(argument: arguments[0])
    }
}

/// DeleteEnrolledFingerWithOptions(s finger, a{sv} options): `user`.
struct DeleteEnrolledFingerWithOptionsArguments: CallArguments {
    var namedUser: String? { options.user }
    let finger: FingerName
    let options: PrintOptions

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        try expect(arguments, 2, "DeleteEnrolledFingerWithOptions", "sa{sv}")
        finger = try FingerName(argument: arguments[0])
        options = try PrintOptions(arguments[1])
    }
}

/// DeleteEnrolledFingersWithOptions(a{sv} options): `user`.
struct DeleteEnrolledFingersWithOptionsArguments: CallArguments {
    var namedUser: String? { options.user }
    let options: PrintOptions

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        try expect(arguments, 1, "DeleteEnrolledFingersWithOptions", "a{sv}")
        options = try PrintOptions(arguments[0])
    }
}

/// ListReaderPrints(a{sv} options): no option is defined yet; unknown ones
/// are ignored (forward compatibility).
struct ListReaderPrintsArguments: CallArguments {
    init(_ arguments: [DBusValue]) throws(ServiceError) {
        try expect(arguments, 1, "ListReaderPrints", "a{sv}")
        guard arguments[0].stringKeyedDictionary != nil else { throw ServiceErrors.invalidArgs("options must be a{sv}") }
    }
}

/// RemoveOrphanPrints(a{sv} options): no option is defined yet; unknown ones
/// are ignored (forward compatibility).
struct RemoveOrphanPrintsArguments: CallArguments {
    init(_ arguments: [DBusValue]) throws(ServiceError) {
        try expect(arguments, 1, "RemoveOrphanPrints", "a{sv}")
        guard arguments[0].stringKeyedDictionary != nil else { throw ServiceErrors.invalidArgs("options must be a{sv}") }
    }
}
