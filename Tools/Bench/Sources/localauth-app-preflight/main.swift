// localauth-app-preflight N: what an app pays for its preflight through the
// Swift library, in one process: `LAContext()`, `canEvaluatePolicy`,
// `biometryType`, N times after 20 unmeasured ones (the first connects).
// Prints each duration in nanoseconds, one a line; exits 1 if a preflight
// does not say yes with Touch ID. localauth-bench runs it on its rig.
import Foundation
import LocalAuthentication

func nanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

func preflight() {
    let context = LAContext()
    var error: NSError?
    guard context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error),
        context.biometryType == .touchID
    else {
        FileHandle.standardError.write(Data("preflight failed: \(error.map { "\($0)" } ?? "biometryType \(context.biometryType.rawValue)")\n".utf8))
        exit(1)
    }
}

guard CommandLine.arguments.count == 2, let count = Int(CommandLine.arguments[1]), count > 0 else {
    FileHandle.standardError.write(Data("usage: localauth-app-preflight N\n".utf8))
    exit(2)
}
for _ in 0..<20 { preflight() }
var samples = [UInt64](repeating: 0, count: count)
for index in 0..<count {
    let start = nanoseconds()
    preflight()
    samples[index] = nanoseconds() - start
}
print(samples.map(String.init).joined(separator: "\n"))
