import LocalAuthCrypto
import LocalAuthRights

typealias ResealKey = P256.PrivateKey

/// What the login-secret component needs from the rest of the service
/// (served by LoginSecretWiring.swift, by fakes in the unit tests).
@ServiceActor
protocol LoginSecretKeys {
    /// The machine's key protector now (the rights' one: the TPM's sealed
    /// machine key, else the software machine key), opened off the loop.
    func protector() async throws(ServiceError) -> any KeyProtector
    /// Where the records live.
    var store: LoginSecretStore { get }
    /// The administrator chose the software key backend (`localauthd --tpm
    /// off`): only then may a machine wrap the TPM made be sealed to it.
    var softwareChosen: Bool { get }
}

@ServiceActor
protocol LoginSecretAccounts {
    /// The uid of an account name, nil if there is none.
    func uid(of name: String) -> UInt32?
}

@ServiceActor
struct LoginSecretSeams {
    let keys: any LoginSecretKeys
    let accounts: any LoginSecretAccounts
    let clock: any ServiceClock
}
