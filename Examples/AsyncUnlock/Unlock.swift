import LocalAuthentication

// Modern Swift: async/await, with the account password as the fallback.
enum UnlockResult: Sendable, Equatable {
    case unlocked
    case cancelled
    case failed(String)
}

func unlock() async -> UnlockResult {
    let context = LAContext()
    context.localizedCancelTitle = "Not Now"
    var error: NSError?
    let policy: LAPolicy = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)
        ? .deviceOwnerAuthenticationWithBiometrics
        : .deviceOwnerAuthentication
    do {
        try await context.evaluatePolicy(policy, localizedReason: "Unlock your notes")
        return .unlocked
    } catch LAError.userCancel, LAError.appCancel, LAError.systemCancel {
        return .cancelled
    } catch let error as LAError where error.code == .userFallback {
        // Fall back to the account password.
        do {
            try await LAContext().evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "Unlock your notes")
            return .unlocked
        } catch {
            return .failed(error.localizedDescription)
        }
    } catch {
        return .failed(error.localizedDescription)
    }
}
