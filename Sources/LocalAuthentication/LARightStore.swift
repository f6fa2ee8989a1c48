import DBusCore
import Foundation
import LocalAuthShared

/// Apple's `LARightStore`: rights kept by the service for this user and app,
/// by identifier. The app is the sandbox's app id for a Flatpak or snap app;
/// otherwise `LOCALAUTH_APP_ID` (a reverse-DNS id), else the program's name
/// (docs/RIGHTS.md, "Whose rights").
public final class LARightStore: NSObject, Sendable {
    public static let shared = LARightStore()

    /// This program's app id outside a sandbox.
    static let appID: String = {
        if let id = ProcessInfo.processInfo.environment["LOCALAUTH_APP_ID"], !id.isEmpty { return id }
        return ProcessInfo.processInfo.processName
    }()

    private var options: DBusValue { .dictionary([LocalAuthRightsBus.Option.appID: .string(Self.appID)]) }

    /// Persists `right` under `identifier`, replacing a right of that identifier.
    public func saveRight(_ right: LARight, identifier: String) async throws -> LAPersistedRight {
        try await save(right, identifier: identifier, secret: nil)
    }

    /// Persists `right` under `identifier` with `secret` (at most 64 KiB).
    public func saveRight(_ right: LARight, identifier: String, secret: Data) async throws -> LAPersistedRight {
        try await save(right, identifier: identifier, secret: secret)
    }

    private func save(_ right: LARight, identifier: String, secret: Data?) async throws -> LAPersistedRight {
        var options: [String: DBusValue] = [LocalAuthRightsBus.Option.appID: .string(Self.appID)]
        if let secret { options[LocalAuthRightsBus.Option.secret] = .bytes([UInt8](secret)) }
        let reply: [DBusValue]
        do {
            reply = try await ServiceClient.shared.call(
                LocalAuthRightsBus.Method.saveRight,
                [.string(identifier), .string(right.requirement.name.rawValue), .dictionary(options)])
        } catch {
            throw LAError(rights: error)
        }
        return LAPersistedRight(identifier: identifier, appID: Self.appID, requirement: right.requirement,
                                publicKey: Data(reply.first?.byteArray ?? []))
    }

    /// The right stored under `identifier`.
    public func right(forIdentifier identifier: String) async throws -> LAPersistedRight {
        let reply: [DBusValue]
        do {
            reply = try await ServiceClient.shared.call(LocalAuthRightsBus.Method.listRights, [options])
        } catch {
            throw LAError(rights: error)
        }
        guard case .array(_, let entries)? = reply.first else { throw LAError(.systemCancel) }
        for entry in entries {
            guard let fields = entry.stringKeyedDictionary,
                  fields[LocalAuthRightsBus.RightKey.identifier]?.string == identifier else { continue }
            let name = fields[LocalAuthRightsBus.RightKey.requirement]?.string.flatMap(RightRequirementName.init(rawValue:)) ?? .default
            return LAPersistedRight(identifier: identifier, appID: Self.appID, requirement: LAAuthenticationRequirement(name),
                                    publicKey: Data(fields[LocalAuthRightsBus.RightKey.publicKey]?.byteArray ?? []))
        }
        throw LAError(rights: DBusError(DBusError.Name(rawValue: LocalAuthRightsError.rightNotFound), "no right"))
    }

    /// Removes a persisted right.
    public func removeRight(_ right: LAPersistedRight) async throws {
        try await removeRight(forIdentifier: right.identifier)
        right.setState(.notAuthorized)
    }

    /// Removes the right stored under `identifier`.
    public func removeRight(forIdentifier identifier: String) async throws {
        do {
            _ = try await ServiceClient.shared.call(LocalAuthRightsBus.Method.removeRight, [.string(identifier), options])
        } catch {
            throw LAError(rights: error)
        }
    }

    /// Removes every right of this app.
    public func removeAllRights() async throws {
        do {
            _ = try await ServiceClient.shared.call(LocalAuthRightsBus.Method.removeAllRights, [options])
        } catch {
            throw LAError(rights: error)
        }
    }
}

extension LARightStore {
    /// Not Apple's API: the identifiers of this app's rights, sorted (for
    /// `localauthctl secret list` and apps that manage their rights).
    public func identifiers() async throws -> [String] {
        let reply: [DBusValue]
        do {
            reply = try await ServiceClient.shared.call(LocalAuthRightsBus.Method.listRights, [options])
        } catch {
            throw LAError(rights: error)
        }
        guard case .array(_, let entries)? = reply.first else { return [] }
        return entries.compactMap { $0.stringKeyedDictionary?[LocalAuthRightsBus.RightKey.identifier]?.string }.sorted()
    }

    /// Not Apple's API: the app id this process's rights are kept under
    /// outside a sandbox (`LOCALAUTH_APP_ID`, else the program's name).
    public static var currentAppID: String { appID }
}
