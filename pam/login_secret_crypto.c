// The login secret's cryptography in the PAM host (docs/KEYRING.md), over
// libcrypto's EVP API and Debian's libargon2; the same constructions as
// LocalAuthCrypto's (ECIES: Apple's eciesEncryptionCofactorVariableIVX963SHA256AESGCM;
// LoginPasswordKey), so what one side seals the other opens.
#include "login_secret.h"

#include <argon2.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <security/pam_ext.h>
#include <string.h>
#include <syslog.h>

int ls_random(unsigned char *buffer, size_t count) {
    return RAND_bytes(buffer, (int)count) == 1;
}

/// Uncompressed 04 ‖ X ‖ Y of a P-256 key.
int ls_public_point(EVP_PKEY *key, unsigned char point[LS_POINT_BYTES]) {
    size_t length = 0;
    if (EVP_PKEY_set_utf8_string_param(key, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT, "uncompressed") != 1) return 0;
    return EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point, LS_POINT_BYTES, &length) == 1 &&
           length == LS_POINT_BYTES && point[0] == 0x04;
}

EVP_PKEY *ls_new_key(void) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

/// A public key from 65 uncompressed bytes, on P-256.
static EVP_PKEY *public_key(const unsigned char point[LS_POINT_BYTES]) {
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    char group[] = "prime256v1";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)point, LS_POINT_BYTES),
        OSSL_PARAM_construct_end(),
    };
    if (!context || EVP_PKEY_fromdata_init(context) != 1 || EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = NULL;
    EVP_PKEY_CTX_free(context);
    if (key) {
        // The point must be on the curve before any ECDH with it.
        EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
        if (!check || EVP_PKEY_public_check(check) != 1) {
            EVP_PKEY_free(key);
            key = NULL;
        }
        EVP_PKEY_CTX_free(check);
    }
    return key;
}

/// libcrypto's KDF `name` over SHA-256 with key and info.
static int derive(const char *name, const unsigned char *key, size_t key_length, const unsigned char *info, size_t info_length,
                  unsigned char *out, size_t out_length) {
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, name, NULL);
    EVP_KDF_CTX *context = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key, key_length),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_length),
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end(),
    };
    int ok = context && EVP_KDF_derive(context, out, out_length, params) == 1;
    EVP_KDF_CTX_free(context);
    EVP_KDF_free(kdf);
    return ok;
}

/// Z = x(e·Q), 32 bytes.
static int shared_secret(EVP_PKEY *mine, EVP_PKEY *peer, unsigned char z[32]) {
    size_t length = 32;
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_pkey(NULL, mine, NULL);
    int ok = context && EVP_PKEY_derive_init(context) == 1 && EVP_PKEY_derive_set_peer(context, peer) == 1 &&
             EVP_PKEY_derive(context, z, &length) == 1 && length == 32;
    EVP_PKEY_CTX_free(context);
    return ok;
}

/// AES-128-GCM with a 16-byte IV, no associated data; `encrypt` or decrypt with `tag`.
static int aes_gcm(int encrypt, const unsigned char key_iv[32], const unsigned char *in, size_t length, unsigned char *out,
                   unsigned char tag[16]) {
    EVP_CIPHER_CTX *context = EVP_CIPHER_CTX_new();
    int written = 0, ok = context && EVP_CipherInit_ex(context, EVP_aes_128_gcm(), NULL, NULL, NULL, encrypt) == 1 &&
                          EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, 16, NULL) == 1 &&
                          EVP_CipherInit_ex(context, NULL, NULL, key_iv, key_iv + 16, encrypt) == 1 &&
                          EVP_CipherUpdate(context, out, &written, in, (int)length) == 1 && (size_t)written == length;
    if (ok && !encrypt) ok = EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1;
    unsigned char tail[16];
    if (ok) ok = EVP_CipherFinal_ex(context, tail, &written) == 1;
    if (ok && encrypt) ok = EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
    EVP_CIPHER_CTX_free(context);
    return ok;
}

int ls_ecies_decrypt(EVP_PKEY *key, const unsigned char *ciphertext, size_t length, unsigned char *plaintext, size_t plaintext_length) {
    if (length != LS_POINT_BYTES + plaintext_length + 16) return 0;
    EVP_PKEY *ephemeral = public_key(ciphertext);
    unsigned char z[32], key_iv[32], tag[16];
    memcpy(tag, ciphertext + length - 16, 16);
    int ok = ephemeral && shared_secret(key, ephemeral, z) &&
             derive("X963KDF", z, sizeof z, ciphertext, LS_POINT_BYTES, key_iv, sizeof key_iv) &&
             aes_gcm(0, key_iv, ciphertext + LS_POINT_BYTES, plaintext_length, plaintext, tag);
    EVP_PKEY_free(ephemeral);
    OPENSSL_cleanse(z, sizeof z);
    OPENSSL_cleanse(key_iv, sizeof key_iv);
    if (!ok) OPENSSL_cleanse(plaintext, plaintext_length);
    return ok;
}

int ls_ecies_encrypt(const unsigned char recipient[LS_POINT_BYTES], const unsigned char *plaintext, size_t length, unsigned char *out) {
    EVP_PKEY *peer = public_key(recipient), *ephemeral = ls_new_key();
    unsigned char z[32], key_iv[32];
    int ok = peer && ephemeral && ls_public_point(ephemeral, out) && shared_secret(ephemeral, peer, z) &&
             derive("X963KDF", z, sizeof z, out, LS_POINT_BYTES, key_iv, sizeof key_iv) &&
             aes_gcm(1, key_iv, plaintext, length, out + LS_POINT_BYTES, out + LS_POINT_BYTES + length);
    EVP_PKEY_free(peer);
    EVP_PKEY_free(ephemeral);
    OPENSSL_cleanse(z, sizeof z);
    OPENSSL_cleanse(key_iv, sizeof key_iv);
    return ok;
}

int ls_sign(EVP_PKEY *key, const unsigned char *message, size_t length, unsigned char *signature, size_t *signature_length) {
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    int ok = context && EVP_DigestSignInit_ex(context, NULL, "SHA256", NULL, NULL, key, NULL) == 1 &&
             EVP_DigestSign(context, signature, signature_length, message, length) == 1;
    EVP_MD_CTX_free(context);
    return ok;
}

/// A P-256 key from its scalar: PKCS#8 over a SEC1 key without the public
/// point (libcrypto computes it), as P256.PrivateKey(scalar:) does.
static EVP_PKEY *key_from_scalar(const unsigned char scalar[32]) {
    static const unsigned char prefix[] = {
        0x30, 0x41, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08,
        0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x04, 0x27, 0x30, 0x25, 0x02, 0x01, 0x01, 0x04, 0x20,
    };
    unsigned char der[sizeof prefix + 32];
    memcpy(der, prefix, sizeof prefix);
    memcpy(der + sizeof prefix, scalar, 32);
    const unsigned char *cursor = der;
    EVP_PKEY *key = d2i_AutoPrivateKey(NULL, &cursor, (long)sizeof der);
    OPENSSL_cleanse(der, sizeof der);
    if (!key) return NULL;
    EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
    if (!check || EVP_PKEY_check(check) != 1) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    EVP_PKEY_CTX_free(check);
    return key;
}

EVP_PKEY *ls_password_key(pam_handle_t *pamh, const char *user, uid_t uid, const char *password, const LSPasswordParameters *parameters,
                          int *no_slot) {
    unsigned char seed[32];
    LSArgon2Lease lease;
    char why[160] = "";
    *no_slot = 0;
    int entered = ls_argon2_enter(uid, &lease, why, sizeof why);
    if (entered != LS_ARGON2_OK) {
        *no_slot = 1;
        pam_syslog(pamh, entered == LS_ARGON2_ERROR ? LOG_ERR : LOG_WARNING, "keyring: no Argon2id derivation for %s: %s", user, why);
        return NULL;
    }
    int result = argon2id_hash_raw(parameters->time, parameters->memory_kib, parameters->lanes, password, strlen(password),
                                   parameters->salt, parameters->salt_length, seed, sizeof seed);
    ls_argon2_leave(&lease);
    EVP_PKEY *key = result == ARGON2_OK ? ls_key_from_seed(seed) : NULL;
    OPENSSL_cleanse(seed, sizeof seed);
    return key;
}

EVP_PKEY *ls_key_from_seed(const unsigned char seed[32]) {
    static const char label[] = "org.example.LocalAuth login password key 1";
    unsigned char info[sizeof label], scalar[32];
    memcpy(info, label, sizeof label - 1);
    EVP_PKEY *key = NULL;
    for (unsigned char counter = 1; counter <= 8 && !key; counter++) {
        info[sizeof label - 1] = counter;
        if (!derive("HKDF", seed, 32, info, sizeof info, scalar, sizeof scalar)) break;
        key = key_from_scalar(scalar);
    }
    OPENSSL_cleanse(scalar, sizeof scalar);
    return key;
}
