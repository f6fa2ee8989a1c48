import LocalAuthentication

// As in Apple's "Logging a User into Your App with Face ID or Touch ID".
func checkBiometrics() -> String {
    let context = LAContext()
    var error: NSError?

    if context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) {
        switch context.biometryType {
        case .faceID:
            return "Face ID is available."
        case .touchID:
            return "Touch ID is available."
        case .opticID:
            return "Optic ID is available."
        case .none:
            return "No biometry."
        @unknown default:
            return "Unknown biometry."
        }
    }

    guard let error = error else { return "Unknown error." }
    let laError = error as! LAError
    switch laError.code {
    case .biometryNotAvailable:
        return "Biometry is not available on this device."
    case .biometryNotEnrolled:
        return "Biometry is not enrolled."
    case .biometryLockout:
        return "Biometry is locked out."
    case .passcodeNotSet:
        return "A passcode is not set."
    default:
        return "Error \(error.code): \(error.localizedDescription)"
    }
}
