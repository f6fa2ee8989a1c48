import DBusCore
import LocalAuthShared

// The arguments of the enrollment methods, decoded and validated once at
// arrival (one struct per shape of arguments, below). Whose prints a call is about
// (the `user` option) needs the manage action: Authorization.swift reads it
// with `PrintOptions` before polkit is asked.

/// The options of EnrollWithOptions, ListEnrolledPrints and Delete…WithOptions.
struct PrintOptions {
    /// Another user, by name (nil: the caller).
    var user: String?
    var replace = false

    init(_ value: DBusValue) throws(ServiceError) {
        let entries = try CallArgument.options(value)
        user = try entries.option(LocalAuthBus.PrintOption.user, \.string, "a string (a user name)")
        if let user, user.isEmpty || user.utf8.count > 256 { throw ServiceErrors.invalidArgs("user must be 1 to 256 bytes") }
        replace = try entries.option(LocalAuthBus.PrintOption.replace, \.bool, "a boolean") ?? false
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

// The methods come in four shapes of arguments, one struct each; each method
// takes its shape's struct under its own name (the table at the end), by
// which its handler takes it.
// The router has checked the signature before decoding; the count is checked
// again for a struct made anywhere else.

/// Reads `count` arguments or says which the method takes.
private func expect(_ arguments: [DBusValue], _ count: Int, _ signature: String) throws(ServiceError) {
    guard arguments.count == count else { throw ServiceErrors.invalidArgs("the method takes (\(signature))") }
}

/// (s finger): the caller's own finger; Enroll never replaces.
struct FingerArguments: CallArguments {
    let finger: FingerName

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        try expect(arguments, 1, "s finger")
        finger = try FingerName(argument: arguments[0])
    }
}

/// (s finger, a{sv} options): `user`; EnrollWithOptions also `replace`.
struct FingerWithOptionsArguments: CallArguments {
    var namedUser: String? { options.user }
    let finger: FingerName
    let options: PrintOptions

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        try expect(arguments, 2, "s finger, a{sv} options")
        finger = try FingerName(argument: arguments[0])
        options = try PrintOptions(arguments[1])
    }
}

/// (a{sv} options): `user`.
struct PrintOptionsArguments: CallArguments {
    var namedUser: String? { options.user }
    let options: PrintOptions

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        try expect(arguments, 1, "a{sv} options")
        options = try PrintOptions(arguments[0])
    }
}

/// (a{sv} options) of the administrators' methods: no option is defined
/// yet; unknown ones are ignored (forward compatibility).
struct ReaderPrintsArguments: CallArguments {
    init(_ arguments: [DBusValue]) throws(ServiceError) {
        try expect(arguments, 1, "a{sv} options")
        _ = try CallArgument.options(arguments[0])
    }
}

// Each method's arguments, by its shape.
typealias EnrollArguments = FingerArguments
typealias DeleteEnrolledFingerArguments = FingerArguments
typealias EnrollWithOptionsArguments = FingerWithOptionsArguments
typealias DeleteEnrolledFingerWithOptionsArguments = FingerWithOptionsArguments
typealias ListEnrolledPrintsArguments = PrintOptionsArguments
typealias DeleteEnrolledFingersWithOptionsArguments = PrintOptionsArguments
typealias ListReaderPrintsArguments = ReaderPrintsArguments
typealias RemoveOrphanPrintsArguments = ReaderPrintsArguments
