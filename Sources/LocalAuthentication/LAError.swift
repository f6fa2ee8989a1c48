import Foundation
import LocalAuthShared

/// The error domain of LocalAuthentication errors, as on Apple's platforms.
public let LAErrorDomain = "com.apple.LocalAuthentication"

/// An authentication error (Apple's `LAError`), bridged to `NSError` with
/// domain `LAErrorDomain` and Apple's negative codes, so that
/// `catch LAError.userCancel`, `(error as NSError).code`, `error._code` and
/// `LAError.Code.biometryNotEnrolled.rawValue` all behave as on Apple's platforms.
public struct LAError: _BridgedStoredNSError, Sendable, Hashable {
    public let _nsError: NSError
    public init(_nsError: NSError) { self._nsError = _nsError }

    public static var errorDomain: String { LAErrorDomain }
    public static var _nsErrorDomain: String { LAErrorDomain }

    public enum Code: Int, _ErrorCodeProtocol, Sendable, CaseIterable {
        public typealias _ErrorType = LAError

        case authenticationFailed = -1
        case userCancel = -2
        case userFallback = -3
        case systemCancel = -4
        case passcodeNotSet = -5
        case biometryNotAvailable = -6
        case biometryNotEnrolled = -7
        case biometryLockout = -8
        case appCancel = -9
        case invalidContext = -10
        case watchNotAvailable = -11
        case biometryNotPaired = -12
        case biometryDisconnected = -13
        case invalidDimensions = -14
        case notInteractive = -1004

        @available(*, deprecated, renamed: "biometryNotAvailable")
        public static var touchIDNotAvailable: Code { .biometryNotAvailable }
        @available(*, deprecated, renamed: "biometryNotEnrolled")
        public static var touchIDNotEnrolled: Code { .biometryNotEnrolled }
        @available(*, deprecated, renamed: "biometryLockout")
        public static var touchIDLockout: Code { .biometryLockout }
    }

    /// Makes an error with Apple's description for `code` (or `message`).
    public init(_ code: Code, message: String? = nil, dbusErrorName: String? = nil) {
        var userInfo: [String: Any] = [NSLocalizedDescriptionKey: message ?? code.defaultDescription]
        if let dbusErrorName { userInfo[LAError.dbusErrorNameKey] = dbusErrorName }
        self.init(_nsError: NSError(domain: LAErrorDomain, code: code.rawValue, userInfo: userInfo))
    }

    /// userInfo key holding the service's D-Bus error name, where one caused this error.
    public static let dbusErrorNameKey = "LocalAuthDBusErrorName"

    public static var authenticationFailed: Code { .authenticationFailed }
    public static var userCancel: Code { .userCancel }
    public static var userFallback: Code { .userFallback }
    public static var systemCancel: Code { .systemCancel }
    public static var passcodeNotSet: Code { .passcodeNotSet }
    public static var biometryNotAvailable: Code { .biometryNotAvailable }
    public static var biometryNotEnrolled: Code { .biometryNotEnrolled }
    public static var biometryLockout: Code { .biometryLockout }
    public static var appCancel: Code { .appCancel }
    public static var invalidContext: Code { .invalidContext }
    public static var watchNotAvailable: Code { .watchNotAvailable }
    public static var biometryNotPaired: Code { .biometryNotPaired }
    public static var biometryDisconnected: Code { .biometryDisconnected }
    public static var invalidDimensions: Code { .invalidDimensions }
    public static var notInteractive: Code { .notInteractive }
    @available(*, deprecated, renamed: "biometryNotAvailable")
    public static var touchIDNotAvailable: Code { .biometryNotAvailable }
    @available(*, deprecated, renamed: "biometryNotEnrolled")
    public static var touchIDNotEnrolled: Code { .biometryNotEnrolled }
    @available(*, deprecated, renamed: "biometryLockout")
    public static var touchIDLockout: Code { .biometryLockout }
}

// Casting an `NSError` (e.g. the one `canEvaluatePolicy(_:error:)` hands out)
// to `LAError` with `as?`/`as!` works as on Apple's platforms: the Swift runtime
// on Linux bridges through `_ObjectiveCBridgeable` when Foundation is present.
extension LAError: _ObjectiveCBridgeable {
    public func _bridgeToObjectiveC() -> NSError { _nsError }

    public static func _forceBridgeFromObjectiveC(_ source: NSError, result: inout LAError?) {
        result = LAError(_nsError: source)
    }

    public static func _conditionallyBridgeFromObjectiveC(_ source: NSError, result: inout LAError?) -> Bool {
        guard source.domain == LAErrorDomain else { return false }
        result = LAError(_nsError: source)
        return true
    }

    public static func _unconditionallyBridgeFromObjectiveC(_ source: NSError?) -> LAError {
        LAError(_nsError: source ?? NSError(domain: LAErrorDomain, code: LAError.Code.systemCancel.rawValue))
    }
}

extension LAError.Code {
    /// What the error means, in words a person can read.
    public var defaultDescription: String {
        switch self {
        case .authenticationFailed: "Authentication was not successful because the user failed to provide valid credentials."
        case .userCancel: "Authentication was canceled by the user."
        case .userFallback: "Authentication was canceled because the user chose the fallback."
        case .systemCancel: "Authentication was canceled by the system."
        case .passcodeNotSet: "Authentication could not start because no password is set for this account."
        case .biometryNotAvailable: "Biometry is not available on this device."
        case .biometryNotEnrolled: "No fingerprints are enrolled for this user."
        case .biometryLockout: "Biometry is locked out because there were too many failed attempts."
        case .appCancel: "Authentication was canceled by the application."
        case .invalidContext: "The context is invalid; it was invalidated or used incorrectly."
        case .watchNotAvailable: "No paired Apple Watch is available; watches are not supported on Linux."
        case .biometryNotPaired: "No biometric accessory is paired."
        case .biometryDisconnected: "The biometric accessory is not connected."
        case .invalidDimensions: "Invalid dimensions were given."
        case .notInteractive: "Authentication needs the user, but interaction is not allowed."
        }
    }
}

extension LAError.Code {
    /// The code the service means by one of its LAError names
    /// (`LocalAuthErrorCode`, the wire's table): the case of the same name.
    /// Exhaustive, so a code added to the wire does not build until it maps.
    init(_ wire: LocalAuthErrorCode) {
        switch wire {
        case .authenticationFailed: self = .authenticationFailed
        case .userCancel: self = .userCancel
        case .userFallback: self = .userFallback
        case .systemCancel: self = .systemCancel
        case .passcodeNotSet: self = .passcodeNotSet
        case .biometryNotAvailable: self = .biometryNotAvailable
        case .biometryNotEnrolled: self = .biometryNotEnrolled
        case .biometryLockout: self = .biometryLockout
        case .appCancel: self = .appCancel
        case .invalidContext: self = .invalidContext
        case .notInteractive: self = .notInteractive
        }
    }
}

// The kLAError* constants of Apple's C headers (Int32), for code that compares
// `Int32(error.code) == kLAErrorBiometryLockout`: the codes above, as numbers.
public let kLAErrorAuthenticationFailed = Int32(LAError.Code.authenticationFailed.rawValue)
public let kLAErrorUserCancel = Int32(LAError.Code.userCancel.rawValue)
public let kLAErrorUserFallback = Int32(LAError.Code.userFallback.rawValue)
public let kLAErrorSystemCancel = Int32(LAError.Code.systemCancel.rawValue)
public let kLAErrorPasscodeNotSet = Int32(LAError.Code.passcodeNotSet.rawValue)
public let kLAErrorBiometryNotAvailable = Int32(LAError.Code.biometryNotAvailable.rawValue)
public let kLAErrorBiometryNotEnrolled = Int32(LAError.Code.biometryNotEnrolled.rawValue)
public let kLAErrorBiometryLockout = Int32(LAError.Code.biometryLockout.rawValue)
public let kLAErrorAppCancel = Int32(LAError.Code.appCancel.rawValue)
public let kLAErrorInvalidContext = Int32(LAError.Code.invalidContext.rawValue)
public let kLAErrorWatchNotAvailable = Int32(LAError.Code.watchNotAvailable.rawValue)
public let kLAErrorBiometryNotPaired = Int32(LAError.Code.biometryNotPaired.rawValue)
public let kLAErrorBiometryDisconnected = Int32(LAError.Code.biometryDisconnected.rawValue)
public let kLAErrorInvalidDimensions = Int32(LAError.Code.invalidDimensions.rawValue)
public let kLAErrorNotInteractive = Int32(LAError.Code.notInteractive.rawValue)
public let kLAErrorTouchIDNotAvailable = Int32(LAError.Code.biometryNotAvailable.rawValue)
public let kLAErrorTouchIDNotEnrolled = Int32(LAError.Code.biometryNotEnrolled.rawValue)
public let kLAErrorTouchIDLockout = Int32(LAError.Code.biometryLockout.rawValue)
