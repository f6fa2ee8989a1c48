// CTSS2: the TPM 2.0 Software Stack (tpm2-tss, Debian's libtss2-dev) for Swift
// (LocalAuthTPM only).
// Why this header exists: it is the one place that says which parts of
// tpm2-tss the project may use, and none of them encodes a TPM command by
// hand:
//  - ESAPI (tss2_esys.h): every TPM command, its marshalling, sessions and
//    object names; the project calls only Esys_* functions for commands;
//  - MU (tss2_mu.h): marshalling of TPM2B_PUBLIC / TPM2B_PRIVATE, the
//    blobs a right keeps on disk;
//  - RC (tss2_rc.h): Tss2_RC_Decode, the text of a response code for errors;
//  - the TCTI loader (tss2_tctildr.h): turns "device:/dev/tpmrm0" or
//    "swtpm:host=127.0.0.1,port=2321" into a transport, loading the TCTI
//    library named there at run time.
// FAPI and SAPI are left out on purpose. Every call is a real function (lazy.c
// forwards each to tpm2-tss, loaded at the first call rather than linked),
// and most constants are cast macros Swift imports.
// The response codes below are macros built from other macros
// ((TPM2_RC) (TPM2_RC_FMT1 + 0x01F)), which Swift does not import; the C
// compiler evaluates them here instead, so no value is copied by hand.
#ifndef CTSS2_SHIM_H
#define CTSS2_SHIM_H
#include <tss2/tss2_common.h>
#include <tss2/tss2_tpm2_types.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

static const TPM2_RC CTSS2_RC_INTEGRITY = TPM2_RC_INTEGRITY; // a blob of another (or a cleared) TPM
static const TPM2_RC CTSS2_RC_BINDING = TPM2_RC_BINDING;
static const TPM2_RC CTSS2_RC_AUTH_FAIL = TPM2_RC_AUTH_FAIL; // a wrong auth value
static const TPM2_RC CTSS2_RC_BAD_AUTH = TPM2_RC_BAD_AUTH;
#endif
