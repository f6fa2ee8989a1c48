internal import CTSS2
import LocalAuthCrypto

/// A TPM object as kept on disk: its TPM2B_PUBLIC and TPM2B_PRIVATE, each
/// marshalled by tpm2-tss (`Tss2_MU_*`, a 2-byte size then the structure),
/// one after the other. The private part is encrypted and integrity-protected
/// by the TPM under its parent, the storage primary key: only the TPM that
/// made it, not cleared since, can load it, and nothing in these bytes is a
/// usable key without that TPM.
public struct TPMObjectBlob: Sendable, Hashable {
    public let bytes: [UInt8]

    /// Checks that `bytes` are exactly one TPM2B_PUBLIC and one TPM2B_PRIVATE
    /// (`.malformedBlob` otherwise).
    public init(bytes: [UInt8]) throws(TPMError) {
        _ = try Self.parts(of: bytes)
        self.bytes = bytes
    }

    init(public publicArea: TPM2B_PUBLIC, private privateArea: TPM2B_PRIVATE) throws(TPMError) {
        var publicArea = publicArea
        var privateArea = privateArea
        var buffer = [UInt8](repeating: 0, count: MemoryLayout<TPM2B_PUBLIC>.size + MemoryLayout<TPM2B_PRIVATE>.size)
        var offset = 0
        let count = buffer.count
        try TSS.call("Tss2_MU_TPM2B_PUBLIC_Marshal") { Tss2_MU_TPM2B_PUBLIC_Marshal(&publicArea, &buffer, count, &offset) }
        try TSS.call("Tss2_MU_TPM2B_PRIVATE_Marshal") { Tss2_MU_TPM2B_PRIVATE_Marshal(&privateArea, &buffer, count, &offset) }
        bytes = Array(buffer.prefix(offset))
    }

    /// The two structures; anything after them is `.malformedBlob` too.
    static func parts(of bytes: [UInt8]) throws(TPMError) -> (TPM2B_PUBLIC, TPM2B_PRIVATE) {
        var publicArea = TPM2B_PUBLIC()
        var privateArea = TPM2B_PRIVATE()
        var offset = 0
        try TSS.call("Tss2_MU_TPM2B_PUBLIC_Unmarshal") { Tss2_MU_TPM2B_PUBLIC_Unmarshal(bytes, bytes.count, &offset, &publicArea) }
        try TSS.call("Tss2_MU_TPM2B_PRIVATE_Unmarshal") { Tss2_MU_TPM2B_PRIVATE_Unmarshal(bytes, bytes.count, &offset, &privateArea) }
        guard offset == bytes.count else {
            throw TPMError(responseCode: TSS.muLayer | UInt32(TSS2_BASE_RC_INSUFFICIENT_BUFFER), call: "TPMObjectBlob",
                           text: "\(bytes.count - offset) bytes after TPM2B_PUBLIC and TPM2B_PRIVATE")
        }
        return (publicArea, privateArea)
    }

    /// The public key of a P-256 key blob, read from its TPM2B_PUBLIC without
    /// the TPM (the TPM binds that public area to the private part when it loads it).
    public func p256PublicKey() throws(TPMError) -> P256.PublicKey {
        let (publicArea, _) = try Self.parts(of: bytes)
        return try TPMBytes.p256PublicKey(publicArea.publicArea)
    }
}

/// Moving bytes in and out of tpm2-tss's fixed-size C arrays (imported as tuples).
enum TPMBytes {
    static func read<T>(_ buffer: T, count: UInt16) -> [UInt8] {
        withUnsafeBytes(of: buffer) { Array($0.prefix(Int(count))) }
    }

    /// Copies `bytes` into `buffer`; returns the size to store beside it.
    static func write<T>(_ bytes: [UInt8], into buffer: inout T) throws(TPMError) -> UInt16 {
        guard bytes.count <= MemoryLayout<T>.size else {
            throw TPMError(responseCode: TSS.muLayer | UInt32(TSS2_BASE_RC_INSUFFICIENT_BUFFER), call: "TPMBytes.write",
                           text: "\(bytes.count) bytes do not fit a TPM buffer of \(MemoryLayout<T>.size)")
        }
        withUnsafeMutableBytes(of: &buffer) { $0.copyBytes(from: bytes) }
        return UInt16(bytes.count)
    }

    /// A coordinate or scalar as exactly 32 bytes (a TPM may drop leading zeros).
    static func padded(_ bytes: [UInt8]) throws(TPMError) -> [UInt8] {
        guard bytes.count <= 32 else { throw TPMError(responseCode: TSS.esysLayer | UInt32(TSS2_BASE_RC_BAD_VALUE), call: "P-256", text: "a coordinate of \(bytes.count) bytes") }
        return [UInt8](repeating: 0, count: 32 - bytes.count) + bytes
    }

    static func p256PublicKey(_ area: TPMT_PUBLIC) throws(TPMError) -> P256.PublicKey {
        guard area.type == TPM2_ALG_ECC, area.parameters.eccDetail.curveID == TPM2_ECC_NIST_P256 else {
            throw TPMError(responseCode: TSS.esysLayer | UInt32(TSS2_BASE_RC_BAD_VALUE), call: "TPMT_PUBLIC", text: "not a P-256 key")
        }
        let x = try padded(read(area.unique.ecc.x.buffer, count: area.unique.ecc.x.size))
        let y = try padded(read(area.unique.ecc.y.buffer, count: area.unique.ecc.y.size))
        do {
            return try P256.PublicKey(x963Representation: [0x04] + x + y)
        } catch {
            throw TPMError(responseCode: TSS.esysLayer | UInt32(TSS2_BASE_RC_BAD_VALUE), call: "TPMT_PUBLIC", text: "not a P-256 point: \(error.message)")
        }
    }
}
