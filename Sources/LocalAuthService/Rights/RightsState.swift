import DBusCore
import Glibc
import LocalAuthCrypto
import LocalAuthRights
import LocalAuthShared

// The rights component's state (docs/RIGHTS.md): the storage, the
// authorizations in force and the cache of verified rights, each bounded per
// uid and in all (docs/SECURITY.md, "Limits").

/// One authorization: what AuthorizeRight handed out.
struct RightAuthorization {
    /// The unique bus name it is bound to; no other connection can use it.
    let sender: String
    let uid: UInt32
    let owner: RightOwner
    /// The right it was made for (its public key's point): a right replaced since has another key.
    let publicKeyPoint: [UInt8]
    let expires: ContinuousClock.Instant
}

/// The service's rights state: the storage (made on first use, with the
/// configured key protector) and the authorizations in force.
@ServiceActor
final class RightsState {
    private let stateDirectory: String
    /// Software or TPM (`--tpm`, docs/TPM.md): the protector is opened on first use.
    private let keyBackend: KeyBackendChoice
    private var cachedStorage: RightStorage?
    /// By handle.
    private(set) var authorizations: [String: RightAuthorization] = [:]
    /// Rights read and verified from disk this run, by owner: verifying a
    /// right (unwrapping, opening both parts, parsing the key) costs about a
    /// millisecond, and an app that loads its secret should not pay it on
    /// every call. Only sealed parts and the public key are held (no
    /// plaintext). The service is the only writer of its root-only state
    /// directory: its own saves and removals update this; a file changed
    /// behind its back is read again at the next start.
    ///
    /// Bounded per uid and in all, by count and by bytes (a right holds up
    /// to 64 KiB of sealed secret): `RightsServiceLimits.verified*`. Past a
    /// bound the oldest entries go (of that uid first), so one uid's flood
    /// of GetPublicKey costs it cache hits and nobody memory.
    private var verified: [RightOwner: CachedRight] = [:]
    private var verifiedBytes = 0
    private var verifiedSequence: UInt64 = 0
    /// What "expired" is measured against (a fake one in the unit tests).
    private let clock: any ServiceClock

    struct CachedRight {
        let record: RightRecord
        let bytes: Int
        let sequence: UInt64
    }

    init(stateDirectory: String, keyBackend: KeyBackendChoice, clock: any ServiceClock = EventLoopClock()) {
        self.stateDirectory = stateDirectory
        self.keyBackend = keyBackend
        self.clock = clock
    }

    /// Every TPM command goes through it (TPMLane.swift).
    let tpm = TPMLane()
    var usesTPM: Bool { keyBackend.resolvedTCTI != nil }

    /// The storage, once opened (`openStorage`). The software backend opens
    /// here at once; a TPM backend is opened only by `openStorage`, off the
    /// loop (unsealing the machine key is a TPM command).
    func storage() throws(ServiceError) -> RightStorage {
        if let cachedStorage { return cachedStorage }
        guard !usesTPM else {
            throw ServiceError(.storageFailed, "the rights store is not open yet")
        }
        return try open { () throws(RightsError) in try keyBackend.openProtector(stateDirectory: stateDirectory) }
    }

    /// Opens the storage on first use; with a TPM, in the TPM lane.
    func openStorage() async throws(ServiceError) -> RightStorage {
        if let cachedStorage { return cachedStorage }
        guard usesTPM else { return try storage() }
        let backend = keyBackend, directory = stateDirectory
        let protector: any KeyProtector
        do throws(TPMLane.Failure) {
            protector = try await tpm.attempt("opening the rights store") { () throws(RightsError) in
                try backend.openProtector(stateDirectory: directory)
            }
        } catch {
            switch error {
            case .notResponding: throw error.answer
            case .failed(let cause):
                Log.error("rights: the key backend \(keyBackend.summary) cannot be used: \(cause)")
                throw ServiceError(.storageFailed, "the rights store cannot be opened")
            }
        }
        if let cachedStorage { return cachedStorage }
        return try open { () throws(RightsError) in protector }
    }

    private func open(_ protector: () throws(RightsError) -> any KeyProtector) throws(ServiceError) -> RightStorage {
        do throws(RightsError) {
            let storage = RightStorage(stateDirectory: stateDirectory, protector: try protector())
            cachedStorage = storage
            return storage
        } catch {
            Log.error("rights: the key backend \(keyBackend.summary) cannot be used: \(error)")
            throw ServiceError(.storageFailed, "the rights store cannot be opened")
        }
    }

    /// A new handle for `authorization`, within the limits.
    func authorize(_ authorization: RightAuthorization) throws(ServiceError) -> String {
        let now = clock.now
        authorizations = authorizations.filter { $0.value.expires > now }
        let mine = authorizations.filter { $0.value.sender == authorization.sender }
        if mine.count >= RightsServiceLimits.authorizationsPerConnection,
           let oldest = mine.min(by: { $0.value.expires < $1.value.expires }) {
            authorizations[oldest.key] = nil
        }
        let ofUser = authorizations.values.filter { $0.uid == authorization.uid }.count
        guard ofUser < RightsServiceLimits.authorizationsPerUser else {
            throw ServiceErrors.limit("uid \(authorization.uid) holds \(RightsServiceLimits.authorizationsPerUser) authorizations; "
                                      + "deauthorize some first")
        }
        guard authorizations.count < RightsServiceLimits.authorizationsInTotal else {
            throw ServiceErrors.limit("the service holds \(RightsServiceLimits.authorizationsInTotal) authorizations")
        }
        let handle: String
        do {
            handle = Hex.encode(try SecureRandom.bytes(16))
        } catch {
            throw ServiceError(.failed, "no random bytes for a handle")
        }
        authorizations[handle] = authorization
        return handle
    }

    func drop(_ handle: String) { authorizations[handle] = nil }

    func cached(_ owner: RightOwner) -> RightRecord? { verified[owner]?.record }

    /// What the cache holds now (for the tests' numbers and the log).
    var verifiedCount: Int { verified.count }
    var verifiedByteCount: Int { verifiedBytes }

    func remember(_ record: RightRecord) {
        let owner = record.owner, bytes = record.byteCount
        removeCached(owner)
        guard bytes <= RightsServiceLimits.verifiedBytesPerUser else { return }
        // This uid's oldest first, then anyone's oldest.
        func usage(of uid: UInt32) -> (count: Int, bytes: Int) {
            verified.values.reduce((0, 0)) { sum, entry in
                entry.record.owner.uid == uid ? (sum.0 + 1, sum.1 + entry.bytes) : sum
            }
        }
        var mine = usage(of: owner.uid)
        while mine.count >= RightsServiceLimits.verifiedPerUser || mine.bytes + bytes > RightsServiceLimits.verifiedBytesPerUser,
              let oldest = verified.filter({ $0.key.uid == owner.uid }).min(by: { $0.value.sequence < $1.value.sequence }) {
            removeCached(oldest.key)
            mine = usage(of: owner.uid)
        }
        while verified.count >= RightsServiceLimits.verifiedInTotal || verifiedBytes + bytes > RightsServiceLimits.verifiedBytesInTotal,
              let oldest = verified.min(by: { $0.value.sequence < $1.value.sequence }) {
            removeCached(oldest.key)
        }
        verifiedSequence += 1
        verified[owner] = CachedRight(record: record, bytes: bytes, sequence: verifiedSequence)
        verifiedBytes += bytes
    }

    private func removeCached(_ owner: RightOwner) {
        if let old = verified.removeValue(forKey: owner) { verifiedBytes -= old.bytes }
    }

    func forget(uid: UInt32, appID: String, identifier: String? = nil) {
        for owner in verified.keys where owner.uid == uid && owner.appID == appID
            && (identifier == nil || owner.identifier == identifier) {
            removeCached(owner)
        }
    }

    func dropAll(where predicate: (RightAuthorization) -> Bool) {
        authorizations = authorizations.filter { !predicate($0.value) }
    }

    /// The caller left the bus: its authorizations end.
    func callerVanished(_ sender: String) {
        guard authorizations.values.contains(where: { $0.sender == sender }) else { return }
        dropAll { $0.sender == sender }
    }
}
