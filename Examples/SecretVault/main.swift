// Driver: SecretVault NOTE_FILE [NOTE]. The first run (no NOTE_FILE yet)
// seals NOTE; later runs open it after the fingerprint and print it.
import Foundation
import LocalAuthentication

let path = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "vault.note"
let vault = Vault(noteURL: URL(fileURLWithPath: path))
do {
    if FileManager.default.fileExists(atPath: path) {
        print("Note: \(try await vault.open())")
    } else {
        try await vault.create(note: CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : "The combination is 12-34-56")
        print("Stored the note; its key is behind your fingerprint.")
    }
} catch let error as LAError {
    print("Refused: \(error.code) \(error.localizedDescription)")
    exit(1)
} catch {
    print("Failed: \(error)")
    exit(2)
}
