// localauthctl evaluate: a fingerprint (or the password) asked from the
// shell, the keyboard as the prompt's cancel and fallback buttons.
import Foundation
import LocalAuthentication
import Synchronization

func evaluate(_ arguments: ArraySlice<String>) async -> Int32 {
    var policy = LAPolicy.deviceOwnerAuthenticationWithBiometrics
    var reason = "Confirm that you are the owner of this account"
    var reuse: TimeInterval = 0
    var rest = arguments
    while let option = rest.popFirst() {
        switch option {
        case "--policy":
            switch rest.popFirst() {
            case "biometrics": policy = .deviceOwnerAuthenticationWithBiometrics
            case "owner": policy = .deviceOwnerAuthentication
            default: usageError("--policy takes biometrics or owner")
            }
        case "--reason":
            guard let text = rest.popFirst() else { usageError("--reason needs a text") }
            reason = text
        case "--reuse":
            guard let text = rest.popFirst(), let seconds = Double(text), seconds.isFinite, seconds >= 0 else {
                usageError("--reuse takes a number of seconds")
            }
            reuse = seconds
        default: usageError("unknown option \(option)")
        }
    }
    let context = LAContext()
    context.touchIDAuthenticationAllowableReuseDuration = reuse
    context.evaluationStatusHandler = { status in say(status.message) }
    say("\(reason): place your finger on the reader…")
    // The keyboard is this prompt's cancel and fallback buttons, but only while
    // nothing else may ask on this terminal: with the password policy, polkit's
    // text agent may prompt here, and its password must not reach us.
    let keys = isatty(0) != 0 && policy == .deviceOwnerAuthenticationWithBiometrics ? KeyListener(context) : nil
    if keys != nil { say("(type c and Enter to cancel, p and Enter to use your password instead)") }
    do {
        try await context.evaluatePolicy(policy, localizedReason: reason)
        keys?.stop()
        say("Verified.")
        return Exit.success
    } catch let error as LAError where error.code == .userFallback {
        keys?.stop()
        say("Using your password instead.")
        do {
            try await LAContext().evaluatePolicy(.deviceOwnerAuthentication, localizedReason: reason)
            say("Verified.")
            return Exit.success
        } catch {
            return report(error)
        }
    } catch {
        keys?.stop()
        return report(error)
    }
}

/// Reads the terminal on a thread of its own and ends the evaluation as the
/// person's cancel (c) or fallback (p). `stop()` returns only once the thread
/// has stopped reading, so that a password typed next goes to whoever asks.
final class KeyListener: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(_ context: LAContext) {
        Thread { [self] in
            defer { finished.signal() }
            var line: [UInt8] = []
            while !stopped.load(ordering: .acquiring) {
                var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, 100) > 0 else { continue }
                var byte: UInt8 = 0
                guard read(0, &byte, 1) == 1 else { return }
                guard byte == UInt8(ascii: "\n") else {
                    line.append(byte)
                    continue
                }
                switch String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased() {
                case "c": context.endEvaluation(as: .userCancel)
                case "p": context.endEvaluation(as: .userFallback)
                default: break
                }
                line.removeAll()
            }
        }.start()
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
    }
}
