// Driver.
import LocalAuthentication
let result = await unlock()
print("\(result)")
exit(result == .unlocked ? 0 : 1)
