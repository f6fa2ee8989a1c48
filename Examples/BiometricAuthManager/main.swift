import Dispatch
import Foundation

// Driver: runs the sample and the main queue it answers on.
print("Biometry: \(BiometricAuthManager.shared.biometricType)")
BiometricAuthManager.shared.authenticateUser(success: {
    print("Authenticated")
    exit(0)
}, failure: { message in
    print("Failed: \(message)")
    exit(1)
})
dispatchMain()
