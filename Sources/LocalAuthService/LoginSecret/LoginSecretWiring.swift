import DBusCore
import LocalAuthRights
import LocalAuthSystem

// The login-secret component's seams (LoginSecretSeams.swift) served by the
// running service: wiring only. The key protector is the rights' own
// (opened once, off the loop when it is a TPM), so a login secret and the
// rights always share one machine key.

@ServiceActor
struct ServiceLoginSecretWiring: LoginSecretKeys, LoginSecretAccounts {
    private let rights: RightsService
    let store: LoginSecretStore
    let softwareChosen: Bool

    init(rights: RightsService, stateDirectory: String, keyBackend: KeyBackendChoice) {
        self.rights = rights
        store = LoginSecretStore(stateDirectory: stateDirectory)
        softwareChosen = keyBackend == .off
    }

    var seams: LoginSecretSeams { LoginSecretSeams(keys: self, accounts: self, clock: EventLoopClock()) }

    func protector() async throws(ServiceError) -> any KeyProtector {
        try await rights.state.openStorage().protector
    }

    func uid(of name: String) -> UInt32? { Users.uid(of: name) }
}
