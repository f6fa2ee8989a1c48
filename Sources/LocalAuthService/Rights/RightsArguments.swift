import DBusCore
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared

// The arguments of each rights method (dbus/org.example.LocalAuth.xml),
// decoded and validated once, at the top of its handler: one struct per
// method, options included. A bad argument is InvalidArgs (or LimitExceeded
// for an oversized input) before anything is read or changed.

/// The options every rights call may carry: the `app-id` a host program's
/// rights are kept under (ignored for a proven sandbox: AppIdentity.appID).
struct RightsAppOptions {
    var declaredAppID: String?

    init(_ value: DBusValue) throws(ServiceError) {
        try self.init(CallArgument.options(value))
    }

    init(_ options: [String: DBusValue]) throws(ServiceError) {
        declaredAppID = try options.option(LocalAuthRightsBus.Option.appID, \.string, "a string")
    }
}

/// SaveRight(identifier, requirement, options{app-id, secret}).
struct SaveRightArguments: CallArguments {
    let identifier: String
    let requirement: RightRequirementName
    let app: RightsAppOptions
    let secret: [UInt8]?

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        identifier = try CallArgument.text(arguments[0], "the identifier")
        let name = try CallArgument.text(arguments[1], "the requirement")
        guard let requirement = RightRequirementName(rawValue: name) else {
            throw ServiceErrors.invalidArgs(
                "unknown requirement \(ServiceErrors.echo(name)); use "
                    + RightRequirementName.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self.requirement = requirement
        let options = try CallArgument.options(arguments[2])
        app = try RightsAppOptions(options)
        secret = try options.option(LocalAuthRightsBus.Option.secret, \.byteArray, "ay")
    }
}

/// RemoveRight, GetPublicKey, CanAuthorizeRight: (identifier, options).
struct RightIdentifierArguments: CallArguments {
    let identifier: String
    let app: RightsAppOptions

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        identifier = try CallArgument.text(arguments[0], "the identifier")
        app = try RightsAppOptions(arguments[1])
    }
}
typealias RemoveRightArguments = RightIdentifierArguments
typealias GetPublicKeyArguments = RightIdentifierArguments
typealias CanAuthorizeRightArguments = RightIdentifierArguments

/// RemoveAllRights, ListRights: (options).
struct RightsAppArguments: CallArguments {
    let app: RightsAppOptions

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        app = try RightsAppOptions(arguments[0])
    }
}
typealias RemoveAllRightsArguments = RightsAppArguments
typealias ListRightsArguments = RightsAppArguments

/// AuthorizeRight(identifier, localized_reason, options): the options are
/// the rights' (`app-id`) and an evaluation's (`request-id`, titles,
/// `interaction-not-allowed`), read here once. On the service's actor, as
/// the evaluation's option parser is.
struct AuthorizeRightArguments: CallArguments {
    var callRequestID: String? { evaluation.requestID }
    let identifier: String
    let reason: String
    let app: RightsAppOptions
    let evaluation: EvaluationOptions

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        identifier = try CallArgument.text(arguments[0], "the identifier")
        reason = try CallArgument.text(arguments[1], "the localized reason")
        guard !reason.trimmed.isEmpty, reason.utf8.count <= LocalAuthBus.maximumTextLength else {
            throw ServiceErrors.invalidArgs("the localized reason must be 1 to \(LocalAuthBus.maximumTextLength) bytes")
        }
        app = try RightsAppOptions(arguments[2])
        var evaluation = try EvaluationOptions(arguments[2])
        // A right is released only for a new verification, never a reused match.
        evaluation.reuseDuration = 0
        self.evaluation = evaluation
    }
}

/// Deauthorize(handle), LoadSecret(handle).
struct RightHandleArguments: CallArguments {
    let handle: String

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        handle = try CallArgument.text(arguments[0], "the handle")
    }
}
typealias DeauthorizeArguments = RightHandleArguments
typealias LoadSecretArguments = RightHandleArguments

/// Sign(handle, algorithm, data), Decrypt(handle, algorithm, data).
struct RightKeyOperationArguments {
    let handle: String
    let algorithm: KeyAlgorithm
    let data: [UInt8]

    init(_ arguments: [DBusValue], _ operation: KeyAlgorithm.Operation, _ verb: String) throws(ServiceError) {
        handle = try CallArgument.text(arguments[0], "the handle")
        algorithm = try KeyAlgorithm(argument: arguments[1])
        guard let bytes = arguments[2].byteArray else { throw ServiceErrors.invalidArgs("the data must be ay") }
        guard bytes.count <= RightsServiceLimits.keyOperationInputBytes else {
            throw ServiceErrors.limit("the data is larger than \(RightsServiceLimits.keyOperationInputBytes) bytes")
        }
        data = bytes
        guard algorithm.operation == operation else { throw ServiceErrors.invalidArgs("\(algorithm.rawValue) cannot \(verb)") }
    }
}

struct SignArguments: CallArguments {
    let operation: RightKeyOperationArguments
    init(_ arguments: [DBusValue]) throws(ServiceError) { operation = try RightKeyOperationArguments(arguments, .sign, "sign") }
}

struct DecryptArguments: CallArguments {
    let operation: RightKeyOperationArguments
    init(_ arguments: [DBusValue]) throws(ServiceError) { operation = try RightKeyOperationArguments(arguments, .encrypt, "decrypt") }
}

/// ExchangeKeys(handle, algorithm, public_key, parameters{requested-size, shared-info}).
struct ExchangeKeysArguments: CallArguments {
    let handle: String
    let algorithm: KeyAlgorithm
    let peer: P256.PublicKey
    /// Set for the X9.63 KDF variants, which need it.
    let requestedSize: Int?
    let sharedInfo: [UInt8]

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        handle = try CallArgument.text(arguments[0], "the handle")
        algorithm = try KeyAlgorithm(argument: arguments[1])
        guard let peerBytes = arguments[2].byteArray else { throw ServiceErrors.invalidArgs("the public key must be ay") }
        let parameters = try CallArgument.options(arguments[3])
        let requestedSize = try parameters.option(
            LocalAuthRightsBus.Option.requestedSize, \.uint32, "a u from 1 to 1024", where: { (1...1024).contains($0) }
        ).map(Int.init)
        let sharedInfo = try parameters.option(
            LocalAuthRightsBus.Option.sharedInfo, \.byteArray, "ay of at most 1024 bytes", where: { $0.count <= 1024 }) ?? []
        guard algorithm.operation == .keyExchange else { throw ServiceErrors.invalidArgs("\(algorithm.rawValue) cannot exchange keys") }
        if algorithm.derivesWithX963, requestedSize == nil {
            throw ServiceErrors.invalidArgs("\(algorithm.rawValue) needs requested-size")
        }
        do throws(CryptoError) {
            peer = try P256.PublicKey(x963Representation: peerBytes)
        } catch {
            throw RightsErrors.crypto(error)
        }
        self.requestedSize = requestedSize
        self.sharedInfo = sharedInfo
    }
}

extension KeyAlgorithm {
    /// The key agreements whose shared secret goes through the X9.63 KDF.
    var derivesWithX963: Bool {
        self == .ecdhKeyExchangeStandardX963SHA256 || self == .ecdhKeyExchangeCofactorX963SHA256
    }
}

extension KeyAlgorithm {
    /// An algorithm named by a caller: one of KeyAlgorithm's names, else InvalidArgs.
    init(argument value: DBusValue) throws(ServiceError) {
        let name = try CallArgument.text(value, "the algorithm")
        guard let algorithm = KeyAlgorithm(rawValue: name) else {
            throw ServiceErrors.invalidArgs("unknown algorithm \(ServiceErrors.echo(name))")
        }
        self = algorithm
    }
}
