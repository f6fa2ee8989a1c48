// Driver: prints the sample's verdict; exit 0 when biometrics can be used.
import LocalAuthentication
let verdict = checkBiometrics()
print(verdict)
exit(verdict.hasSuffix("is available.") ? 0 : 1)
