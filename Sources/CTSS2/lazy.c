// tpm2-tss, loaded at the first call of any of these (CLazyLibrary): every
// tpm2-tss function the project calls, with its header's prototype. A call
// to one missing here fails the link (tpm2-tss is not linked), so adding a
// call means adding its line: the prototype, as in the header. The
// SONAMEs are those of tpm2-tss 3 and 4 (Debian 12's libtss2-*0).
#include "shim.h"
#include <lazy_library.h>

static LazyLibrary esys = {"libtss2-esys.so.0", NULL};
static LazyLibrary mu = {"libtss2-mu.so.0", NULL};
static LazyLibrary rc = {"libtss2-rc.so.0", NULL};
static LazyLibrary tctildr = {"libtss2-tctildr.so.0", NULL};

LAZY_FUNCTION(esys, TSS2_RC, Esys_Create, (ESYS_CONTEXT * a0, ESYS_TR a1, ESYS_TR a2, ESYS_TR a3, ESYS_TR a4, const TPM2B_SENSITIVE_CREATE * a5, const TPM2B_PUBLIC * a6, const TPM2B_DATA * a7, const TPML_PCR_SELECTION * a8, TPM2B_PRIVATE ** a9, TPM2B_PUBLIC ** a10, TPM2B_CREATION_DATA ** a11, TPM2B_DIGEST ** a12, TPMT_TK_CREATION ** a13), (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13))
LAZY_FUNCTION(esys, TSS2_RC, Esys_CreatePrimary, (ESYS_CONTEXT * a0, ESYS_TR a1, ESYS_TR a2, ESYS_TR a3, ESYS_TR a4, const TPM2B_SENSITIVE_CREATE * a5, const TPM2B_PUBLIC * a6, const TPM2B_DATA * a7, const TPML_PCR_SELECTION * a8, ESYS_TR * a9, TPM2B_PUBLIC ** a10, TPM2B_CREATION_DATA ** a11, TPM2B_DIGEST ** a12, TPMT_TK_CREATION ** a13), (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13))
LAZY_FUNCTION(esys, TSS2_RC, Esys_ECDH_ZGen, (ESYS_CONTEXT * a0, ESYS_TR a1, ESYS_TR a2, ESYS_TR a3, ESYS_TR a4, const TPM2B_ECC_POINT * a5, TPM2B_ECC_POINT ** a6), (a0, a1, a2, a3, a4, a5, a6))
LAZY_PROCEDURE(esys, Esys_Finalize, (ESYS_CONTEXT ** a0), (a0))
LAZY_FUNCTION(esys, TSS2_RC, Esys_FlushContext, (ESYS_CONTEXT * a0, ESYS_TR a1), (a0, a1))
LAZY_PROCEDURE(esys, Esys_Free, (void * a0), (a0))
LAZY_FUNCTION(esys, TSS2_RC, Esys_Initialize, (ESYS_CONTEXT ** a0, TSS2_TCTI_CONTEXT * a1, TSS2_ABI_VERSION * a2), (a0, a1, a2))
LAZY_FUNCTION(esys, TSS2_RC, Esys_Load, (ESYS_CONTEXT * a0, ESYS_TR a1, ESYS_TR a2, ESYS_TR a3, ESYS_TR a4, const TPM2B_PRIVATE * a5, const TPM2B_PUBLIC * a6, ESYS_TR * a7), (a0, a1, a2, a3, a4, a5, a6, a7))
LAZY_FUNCTION(esys, TSS2_RC, Esys_Sign, (ESYS_CONTEXT * a0, ESYS_TR a1, ESYS_TR a2, ESYS_TR a3, ESYS_TR a4, const TPM2B_DIGEST * a5, const TPMT_SIG_SCHEME * a6, const TPMT_TK_HASHCHECK * a7, TPMT_SIGNATURE ** a8), (a0, a1, a2, a3, a4, a5, a6, a7, a8))
LAZY_FUNCTION(esys, TSS2_RC, Esys_TR_SetAuth, (ESYS_CONTEXT * a0, ESYS_TR a1, const TPM2B_AUTH * a2), (a0, a1, a2))
LAZY_FUNCTION(esys, TSS2_RC, Esys_Unseal, (ESYS_CONTEXT * a0, ESYS_TR a1, ESYS_TR a2, ESYS_TR a3, ESYS_TR a4, TPM2B_SENSITIVE_DATA ** a5), (a0, a1, a2, a3, a4, a5))
LAZY_FUNCTION(mu, TSS2_RC, Tss2_MU_TPM2B_PRIVATE_Marshal, (const TPM2B_PRIVATE * a0, uint8_t * a1, size_t a2, size_t * a3), (a0, a1, a2, a3))
LAZY_FUNCTION(mu, TSS2_RC, Tss2_MU_TPM2B_PRIVATE_Unmarshal, (const uint8_t * a0, size_t a1, size_t * a2, TPM2B_PRIVATE * a3), (a0, a1, a2, a3))
LAZY_FUNCTION(mu, TSS2_RC, Tss2_MU_TPM2B_PUBLIC_Marshal, (const TPM2B_PUBLIC * a0, uint8_t * a1, size_t a2, size_t * a3), (a0, a1, a2, a3))
LAZY_FUNCTION(mu, TSS2_RC, Tss2_MU_TPM2B_PUBLIC_Unmarshal, (const uint8_t * a0, size_t a1, size_t * a2, TPM2B_PUBLIC * a3), (a0, a1, a2, a3))
LAZY_FUNCTION(rc, const char *, Tss2_RC_Decode, (TSS2_RC a0), (a0))
LAZY_PROCEDURE(tctildr, Tss2_TctiLdr_Finalize, (TSS2_TCTI_CONTEXT ** a0), (a0))
LAZY_FUNCTION(tctildr, TSS2_RC, Tss2_TctiLdr_Initialize, (const char * a0, TSS2_TCTI_CONTEXT ** a1), (a0, a1))
