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
        try self.init(RightsArgument.options(value))
    }

    init(_ options: [String: DBusValue]) throws(ServiceError) {
        if let value = options[LocalAuthRightsBus.Option.appID] {
            guard let id = value.string else { throw ServiceErrors.invalidArgs("app-id must be a string") }
            declaredAppID = id
        }
    }
}

/// SaveRight(identifier, requirement, options{app-id, secret}).
struct SaveRightArguments: CallArguments {
    let identifier: String
    let requirement: RightRequirementName
    let app: RightsAppOptions
    let secret: [UInt8]?

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        identifier = try RightsArgument.text(arguments[0], "the identifier")
        let name = try RightsArgument.text(arguments[1], "the requirement")
        guard let requirement = RightRequirementName(rawValue: name) else {
            throw ServiceErrors.invalidArgs(
                "unknown requirement \(ServiceErrors.echo(name)); use "
                    + RightRequirementName.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self.requirement = requirement
        let options = try RightsArgument.options(arguments[2])
        app = try RightsAppOptions(options)
        if let value = options[LocalAuthRightsBus.Option.secret] {
            guard let bytes = value.byteArray else { throw ServiceErrors.invalidArgs("secret must be ay") }
            secret = bytes
        } else {
            secret = nil
        }
    }
}

/// RemoveRight, GetPublicKey, CanAuthorizeRight: (identifier, options).
struct RightIdentifierArguments: CallArguments {
    let identifier: String
    let app: RightsAppOptions

    init(_ arguments: [DBusValue]) throws(ServiceError) {
        identifier = try RightsArgument.text(arguments[0], "the identifier")
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
        identifier = try RightsArgument.text(arguments[0], "the identifier")
        reason = try RightsArgument.text(arguments[1], "the localized reason")
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
        handle = try RightsArgument.text(arguments[0], "the handle")
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
        handle = try RightsArgument.text(arguments[0], "the handle")
        algorithm = try RightsArgument.algorithm(arguments[1])
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
        handle = try RightsArgument.text(arguments[0], "the handle")
        algorithm = try RightsArgument.algorithm(arguments[1])
        guard let peerBytes = arguments[2].byteArray else { throw ServiceErrors.invalidArgs("the public key must be ay") }
        let parameters = try RightsArgument.options(arguments[3])
        var requestedSize: Int?
        if let value = parameters[LocalAuthRightsBus.Option.requestedSize] {
            guard let size = value.uint32, size > 0, size <= 1024 else {
                throw ServiceErrors.invalidArgs("requested-size must be a u from 1 to 1024")
            }
            requestedSize = Int(size)
        }
        var sharedInfo: [UInt8] = []
        if let value = parameters[LocalAuthRightsBus.Option.sharedInfo] {
            guard let info = value.byteArray, info.count <= 1024 else {
                throw ServiceErrors.invalidArgs("shared-info must be ay of at most 1024 bytes")
            }
            sharedInfo = info
        }
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

/// The pieces the argument structs are made of.
enum RightsArgument {
    static func options(_ value: DBusValue) throws(ServiceError) -> [String: DBusValue] {
        guard let options = value.stringKeyedDictionary else { throw ServiceErrors.invalidArgs("options must be a{sv}") }
        return options
    }

    static func text(_ value: DBusValue, _ what: String) throws(ServiceError) -> String {
        guard let text = value.string else { throw ServiceErrors.invalidArgs("\(what) must be a string") }
        return text
    }

    static func algorithm(_ value: DBusValue) throws(ServiceError) -> KeyAlgorithm {
        let name = try text(value, "the algorithm")
        guard let algorithm = KeyAlgorithm(rawValue: name) else {
            throw ServiceErrors.invalidArgs("unknown algorithm \(ServiceErrors.echo(name))")
        }
        return algorithm
    }
}
