// Files, accounts, hex, SHA-256 and logging come from LocalAuthSystem, shared
// with the rights store; every file of the service sees them.
@_exported import LocalAuthSystem
