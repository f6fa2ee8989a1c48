// COpenSSL: OpenSSL 3's libcrypto for Swift (LocalAuthCrypto only).
// Why this header exists: it is the one place that says which parts of
// libcrypto the project may use. OPENSSL_NO_DEPRECATED hides every API that
// OpenSSL 3.0 deprecated (EC_KEY, ECDH_compute_key, the low-level AES
// functions, ...), so the Swift code can only reach the EVP interfaces:
// EVP_PKEY for P-256, EVP_DigestSign/Verify, EVP_PKEY_derive, EVP_CIPHER for
// AES-GCM, EVP_KDF for the X9.63 KDF and HKDF, RAND_bytes; and ECDSA_SIG with
// BN_bin2bn, to DER-encode the (r, s) of a signature made in a TPM. Every call
// we make is a real function, not a macro; lazy.c forwards each to libcrypto,
// which is loaded at the first call rather than linked.
#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#endif
