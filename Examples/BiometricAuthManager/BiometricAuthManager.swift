import LocalAuthentication

// The singleton that countless tutorials write.
class BiometricAuthManager {
    static let shared = BiometricAuthManager()

    private init() {}

    var biometricType: String {
        let context = LAContext()
        _ = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil)
        if #available(iOS 11.0, *) {
            if context.biometryType == .faceID {
                return "Face ID"
            } else if context.biometryType == .touchID {
                return "Touch ID"
            }
        }
        return "None"
    }

    func authenticateUser(success: @escaping () -> Void, failure: @escaping (String) -> Void) {
        let context = LAContext()
        context.localizedFallbackTitle = "Use Passcode"
        var error: NSError?

        guard context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) else {
            failure(self.message(for: error))
            return
        }

        let reason = "Log in to your account"
        context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: reason) { succeeded, evaluateError in
            DispatchQueue.main.async {
                if succeeded {
                    success()
                } else {
                    failure(self.message(for: evaluateError))
                }
            }
        }
    }

    func message(for error: Error?) -> String {
        guard let error = error else { return "Unknown error" }
        if let laError = error as? LAError, Int32(laError.errorCode) == kLAErrorBiometryLockout {
            return "Too many failed attempts. Use your passcode."
        }
        switch error._code {
        case LAError.authenticationFailed.rawValue:
            return "There was a problem verifying your identity."
        case LAError.userCancel.rawValue:
            return "You pressed cancel."
        case LAError.userFallback.rawValue:
            return "You pressed password."
        case LAError.systemCancel.rawValue:
            return "The system canceled authentication."
        case LAError.passcodeNotSet.rawValue:
            return "A passcode is not set."
        case LAError.biometryNotAvailable.rawValue:
            return "Biometry is not available."
        case LAError.biometryNotEnrolled.rawValue:
            return "Biometry is not set up."
        case LAError.appCancel.rawValue:
            return "The app canceled authentication."
        case LAError.invalidContext.rawValue:
            return "The context is invalid."
        case LAError.notInteractive.rawValue:
            return "Interaction is not allowed."
        default:
            return "Biometry may not be configured."
        }
    }
}
