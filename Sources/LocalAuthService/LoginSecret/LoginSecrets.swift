import DBusCore
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared
import LocalAuthSystem

private typealias Key = LocalAuthLoginSecretBus.Key

/// The login secret (docs/KEYRING.md): per user a random key K that opens
/// the login keyring, kept wrapped by the machine and by the login password
/// (LocalAuthRights.LoginSecretRecord), released only as ECIES to a key the
/// receiver made for the call, and through the machine wrap only to a root
/// PAM host holding a ticket for a match the service saw.
///
/// Owns the tickets and the reseal keys (memory only). Reaches the rest of
/// the service through `LoginSecretSeams`.
@ServiceActor
final class LoginSecrets {
    private let seams: LoginSecretSeams
    private var tickets = LoginSecretTickets()
    private var resealKeys = LoginSecretResealKeys()

    init(seams: LoginSecretSeams) { self.seams = seams }

    // MARK: The match

    /// VerifyUser matched `uid`'s finger for `caller`: a ticket for one release.
    /// (The fprintd VerifyStart handler will record one with an empty nonce.)
    func matchSeen(uid: UInt32, caller: CallerRecord, nonce: [UInt8]) {
        guard caller.uid == 0, let process = CallerProcess(caller) else { return }
        tickets.record(uid: uid, process: process, nonce: nonce, now: seams.clock.now)
    }

    // MARK: The PAM host's side (uid 0)

    /// ReleaseLoginSecret: ECIES(ephemeral, K) for the ticket's user; renews
    /// a stale password wrap for the pending password (the owner's finger agreed).
    func release(_ request: Request, _ arguments: ReleaseLoginSecretArguments) async throws(ServiceError) -> [DBusValue] {
        let process = try requireRoot(request)
        let uid = try account(arguments.user)
        if let refusal = tickets.take(uid: uid, process: process, nonce: arguments.nonce, now: seams.clock.now) {
            Log.info("login secret of uid \(uid) refused to pid \(process.pid): \(refusal)")
            throw ServiceError(.notAuthorized, "no fingerprint match of \(ServiceErrors.echo(arguments.user)) was seen for this transaction")
        }
        var record = try load(uid)
        let protector = try await seams.keys.protector()
        var secret = try machineSecret(record, protector)
        defer { LoginSecretRecord.clear(&secret) }
        var renewed = false
        if let pending = record.pending {
            try rights("renewing the password wrap") { () throws(RightsError) in try record.changePassword(to: pending, secret: secret) }
            try save(record)
            renewed = true
        }
        let sealed = try crypto("sealing the login secret") { () throws(CryptoError) in try ECIES.encrypt(secret, to: arguments.ephemeralKey) }
        Log.info("login secret of uid \(uid) released to pid \(process.pid) after a fingerprint match")
        return [.dictionary([Key.secret: .bytes(sealed), Key.stale: .boolean(record.isPasswordWrapStale), Key.renewed: .boolean(renewed)])]
    }

    /// GetLoginSecretPasswordWrap: what a password login opens with the typed
    /// password; when the machine wrap no longer opens, a key to reseal with.
    func passwordWrap(_ request: Request, _ arguments: GetLoginSecretPasswordWrapArguments) async throws(ServiceError) -> [DBusValue] {
        let process = try requireRoot(request)
        let uid = try account(arguments.user)
        let record = try load(uid)
        var answer = Self.describe(record.password)
        answer[Key.passwordWrap] = .bytes(record.passwordWrap)
        answer[Key.stale] = .boolean(record.isPasswordWrapStale)
        answer[Key.pending] = .boolean(record.pending != nil)
        // The password opens the keyring whatever happened to the machine's
        // key: a protector that cannot open (a cleared TPM) still answers the wrap.
        let protector: any KeyProtector
        do { protector = try await seams.keys.protector() } catch {
            Log.error("login secret of uid \(uid): no key protector (\(error)); the password wrap alone")
            answer[Key.machineWrapOK] = .boolean(false)
            return [.dictionary(answer)]
        }
        do {
            var secret = try record.openMachineWrap(using: protector)
            LoginSecretRecord.clear(&secret)
            answer[Key.machineWrapOK] = .boolean(true)
        } catch {
            answer[Key.machineWrapOK] = .boolean(false)
            if let refusal = resealRefusal(record, protector) {
                Log.warning("login secret of uid \(uid): the machine wrap does not open (\(error)); not offering a reseal: \(refusal)")
                return [.dictionary(answer)]
            }
            Log.info("login secret of uid \(uid): the machine wrap does not open (\(error)); offering a reseal")
            let key = try crypto("a reseal key") { () throws(CryptoError) in try P256.PrivateKey() }
            resealKeys.add(key, uid: uid, process: process, now: seams.clock.now)
            answer[Key.resealKey] = .bytes(key.publicKey.x963Representation)
        }
        return [.dictionary(answer)]
    }

    /// ResealLoginSecret: K back from a password login, checked against the
    /// commitment, wrapped with the machine's protector now.
    func reseal(_ request: Request, _ arguments: ResealLoginSecretArguments) async throws(ServiceError) -> [DBusValue] {
        let process = try requireRoot(request)
        let uid = try account(arguments.user)
        guard let key = resealKeys.take(uid: uid, process: process, now: seams.clock.now) else {
            throw ServiceError(.notAuthorized, "no reseal key was given to this process for that user")
        }
        var record = try load(uid)
        var secret = try crypto("opening the resealed secret", as: .notAuthorized) { () throws(CryptoError) in
            try ECIES.decrypt(arguments.sealed, with: key)
        }
        defer { LoginSecretRecord.clear(&secret) }
        let protector = try await seams.keys.protector()
        if let refusal = resealRefusal(record, protector) {
            Log.warning("login secret of uid \(uid): reseal refused: \(refusal)")
            throw ServiceErrors.permissionDenied(refusal)
        }
        try rights("resealing", as: .notAuthorized) { () throws(RightsError) in try record.reseal(secret, using: protector) }
        try save(record)
        Log.info("login secret of uid \(uid) resealed with \(protector.backendName) after a password login")
        return []
    }

    /// ChangeLoginSecretPassword: with a proof by the current password's key,
    /// the wrap follows the new password now; without, the new password's
    /// key waits for the owner's next fingerprint release.
    func changePassword(_ request: Request, _ arguments: ChangeLoginSecretPasswordArguments) async throws(ServiceError) -> [DBusValue] {
        _ = try requireRoot(request)
        let uid = try account(arguments.user)
        var record = try load(uid)
        guard let password = arguments.password else {
            record.markPasswordChangeMissed()
            try save(record)
            Log.warning(
                "login secret of uid \(uid): a password change could not re-wrap it in the PAM host; the password wrap is stale "
                    + "(the next password login offers the new password for the owner's finger)")
            return [.dictionary([Key.pending: .boolean(record.pending != nil), Key.stale: .boolean(true)])]
        }
        let payload = password.publicKey.x963Representation + password.salt
        let message = LocalAuthLoginSecretBus.ProofLabel.message(
            LocalAuthLoginSecretBus.ProofLabel.change, uid: uid, sender: request.sender,
            payload: payload)
        if let proof = arguments.proof {
            guard record.password.publicKey.isValidSignature(proof, for: message) else {
                throw ServiceError(.notAuthorized, "the proof is not by the current password")
            }
            let protector = try await seams.keys.protector()
            var secret = try machineSecret(record, protector)
            defer { LoginSecretRecord.clear(&secret) }
            try rights("changing the password wrap") { () throws(RightsError) in try record.changePassword(to: password, secret: secret) }
            try save(record)
            Log.info("login secret of uid \(uid): the password wrap follows the new password")
            return [.dictionary([Key.pending: .boolean(false)])]
        }
        record.setPending(password)
        try save(record)
        Log.info("login secret of uid \(uid): a password set without the old one waits for the owner's finger")
        return [.dictionary([Key.pending: .boolean(true)])]
    }

    // MARK: The user's side (their own uid)

    /// EnableLoginSecret: makes K and both wraps; answers the password wrap,
    /// which the caller opens with the key it derived, to rekey its keyring.
    func enable(_ request: Request, _ arguments: EnableLoginSecretArguments) async throws(ServiceError) -> [DBusValue] {
        guard request.uid != 0 else { throw ServiceErrors.permissionDenied("root has no login keyring to open") }
        guard try seams.keys.store.loadChecked(request.uid) == nil else {
            throw ServiceError(.alreadyEnrolled, "the login secret is already on; disable it first")
        }
        // Opening a TPM's protector the first time suspends this call: another
        // enable of the same uid may run meanwhile. The record is created
        // only if none is there (link never replaces): the loser is
        // AlreadyEnrolled, and nothing of the winner's is touched.
        let protector = try await seams.keys.protector()
        let record = try rights("making the login secret") { () throws(RightsError) in
            try LoginSecretRecord.make(uid: request.uid, password: arguments.password, protector: protector)
        }
        guard try rights("saving the login secret", { () throws(RightsError) in try seams.keys.store.create(record) }) else {
            Log.info("login secret of uid \(request.uid): a second enable lost the race to the first; nothing changed")
            throw ServiceError(.alreadyEnrolled, "the login secret is already on; disable it first")
        }
        Log.info("login secret of uid \(request.uid) made (\(protector.backendName))")
        return [.bytes(record.passwordWrap)]
    }

    /// GetLoginSecretStatus: the caller's own state; nothing secret.
    func status(_ request: Request) throws(ServiceError) -> [DBusValue] {
        guard let record = try seams.keys.store.loadChecked(request.uid) else { return [.dictionary([Key.enabled: .boolean(false)])] }
        var answer = Self.describe(record.password)
        answer[Key.enabled] = .boolean(true)
        answer[Key.stale] = .boolean(record.isPasswordWrapStale)
        answer[Key.backend] = .string(record.backend)
        return [.dictionary(answer)]
    }

    /// DisableLoginSecret: with a proof by the password's key, the password
    /// wrap (for the keyring's password to go back); `commit` removes K.
    func disable(_ request: Request, _ arguments: DisableLoginSecretArguments) throws(ServiceError) -> [DBusValue] {
        guard let record = try seams.keys.store.loadChecked(request.uid) else { throw ServiceError(.noSecret, "the login secret is off") }
        let message = LocalAuthLoginSecretBus.ProofLabel.message(LocalAuthLoginSecretBus.ProofLabel.disable, uid: request.uid, sender: request.sender)
        guard record.password.publicKey.isValidSignature(arguments.proof, for: message) else {
            throw ServiceError(.notAuthorized, "the proof is not by the login password")
        }
        if arguments.commit {
            _ = try rights("removing the login secret") { () throws(RightsError) in try seams.keys.store.remove(request.uid) }
            Log.info("login secret of uid \(request.uid) removed")
        }
        return [.bytes(record.passwordWrap)]
    }

    // MARK: Helpers

    private func requireRoot(_ request: Request) throws(ServiceError) -> CallerProcess {
        guard request.uid == 0 else { throw ServiceErrors.permissionDenied("the login secret's PAM side is for root callers") }
        guard let process = CallerProcess(request.caller) else { throw ServiceErrors.permissionDenied("the caller's process cannot be pinned") }
        return process
    }

    private func account(_ name: String) throws(ServiceError) -> UInt32 {
        guard let uid = seams.accounts.uid(of: name) else {
            throw ServiceErrors.invalidArgs("there is no user named \(ServiceErrors.echo(name))")
        }
        return uid
    }

    private func load(_ uid: UInt32) throws(ServiceError) -> LoginSecretRecord {
        guard let record = try seams.keys.store.loadChecked(uid) else { throw ServiceError(.noSecret, "uid \(uid) has no login secret") }
        return record
    }

    private func save(_ record: LoginSecretRecord) throws(ServiceError) {
        try rights("saving the login secret") { () throws(RightsError) in try seams.keys.store.save(record) }
    }

    /// Why the machine wrap may not be sealed again by `protector`, nil if
    /// it may: a wrap the TPM made never goes to the software machine key
    /// (whose key is on the disk) unless the administrator chose software
    /// (`localauthd --tpm off`). Under `--tpm auto` a boot without the TPM
    /// (a firmware setting, a driver failing) falls back to software; the
    /// password still opens the keyring then, and the TPM's wrap is kept.
    private func resealRefusal(_ record: LoginSecretRecord, _ protector: any KeyProtector) -> String? {
        Self.resealRefusal(from: record.backend, to: protector.backendName, softwareChosen: seams.keys.softwareChosen)
    }

    nonisolated static func resealRefusal(from made: String, to now: String, softwareChosen: Bool) -> String? {
        guard made == TPMKeyProtector.name, now != TPMKeyProtector.name, !softwareChosen else { return nil }
        return "the machine wrap was made by the TPM and the key backend is \(now) now; "
            + "it is sealed to the software machine key only with localauthd --tpm off"
    }

    private func machineSecret(_ record: LoginSecretRecord, _ protector: any KeyProtector) throws(ServiceError) -> [UInt8] {
        do {
            return try record.openMachineWrap(using: protector)
        } catch {
            Log.error("login secret of uid \(record.uid): the machine wrap does not open: \(error)")
            throw ServiceError(.storageFailed, "the machine wrap no longer opens (TPM cleared or machine key changed): log in once with the password")
        }
    }

    static func describe(_ key: LoginPasswordKeyInfo) -> [String: DBusValue] {
        [
            Key.salt: .bytes(key.salt), Key.argon2Time: .uint32(key.parameters.time),
            Key.argon2MemoryKiB: .uint32(key.parameters.memoryKiB), Key.argon2Lanes: .uint32(key.parameters.lanes),
        ]
    }

    private func rights<R>(
        _ what: String, as kind: ServiceError.Kind = .storageFailed,
        _ body: () throws(RightsError) -> R
    ) throws(ServiceError) -> R {
        do { return try body() } catch {
            Log.error("login secret: \(what): \(error)")
            throw ServiceError(kind, "\(what) failed")
        }
    }

    private func crypto<R>(
        _ what: String, as kind: ServiceError.Kind = .failed,
        _ body: () throws(CryptoError) -> R
    ) throws(ServiceError) -> R {
        do { return try body() } catch { throw ServiceError(kind, "\(what) failed") }
    }
}

extension LoginSecretStore {
    /// `load`, a damaged file as the service's error.
    func loadChecked(_ uid: UInt32) throws(ServiceError) -> LoginSecretRecord? {
        do { return try load(uid) } catch {
            Log.error("login secret of uid \(uid): \(error)")
            throw ServiceError(.storageFailed, "the login secret cannot be read")
        }
    }
}
