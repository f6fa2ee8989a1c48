// UnlockApp: "unlock with your fingerprint", as an app on Apple's platforms
// writes it. Preflight with canEvaluatePolicy, then evaluatePolicy with a
// reason; fall back to the app's own password when biometrics cannot be used.
import Foundation
import LocalAuthentication

let context = LAContext()
context.localizedFallbackTitle = "Use Password"

var error: NSError?
guard context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) else {
    let reason = error.flatMap { LAError.Code(rawValue: $0.code) } == .biometryNotEnrolled
        ? "no fingerprint is enrolled (localauthctl enroll)"
        : error?.localizedDescription ?? "biometrics unavailable"
    print("Cannot unlock with a fingerprint: \(reason). Falling back to the password.")
    exit(2)
}

let sensor = context.biometryType == .touchID ? "fingerprint reader" : "biometric sensor"
print("Unlocking with the \(sensor)…")
do {
    let success = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics,
                                                   localizedReason: "Unlock your notes")
    print(success ? "Unlocked." : "Not unlocked.")
    exit(success ? 0 : 1)
} catch let error as LAError {
    switch error.code {
    case .userCancel, .appCancel, .systemCancel:
        print("Cancelled: \(error.localizedDescription)")
    case .userFallback:
        print("The user chose the password.")
    case .biometryLockout:
        print("Too many failed attempts: enter your password to unlock biometrics again.")
    default:
        print("Not unlocked: \(error.localizedDescription)")
    }
    exit(1)
}
