// The login secret in pam_localauth (docs/KEYRING.md): the fingerprint
// path's release, the password path's Argon2id unwrap, the scoped
// PAM_AUTHTOK around pam_gnome_keyring, and passwd's re-wrap. Internal to
// the module (hidden visibility).
#ifndef PAM_LOCALAUTH_LOGIN_SECRET_H
#define PAM_LOCALAUTH_LOGIN_SECRET_H

#include <openssl/evp.h>
#include <security/pam_modules.h>
#include <stddef.h>
#include <stdint.h>

#define LS_POINT_BYTES 65
#define LS_SECRET_BYTES 32
#define LS_NONCE_BYTES 32
/// One Argon2id derivation at a time on the machine (flock), waited for at most this long.
#define LS_ARGON2_LOCK "/run/pam_localauth-argon2.lock"
#define LS_LOCK_SECONDS 10
/// Argon2id for a new password: RFC 9106's second option, one lane (no threads in sudo).
#define LS_ARGON2_TIME 3
#define LS_ARGON2_MEMORY_KIB (64 * 1024)
#define LS_ARGON2_LANES 1
#define LS_SALT_BYTES 16
/// What a stored wrap may ask of the PAM host (the service accepts no more:
/// LoginPasswordKey.Parameters.isAffordable): about 0.3 s at most, one thread.
#define LS_ARGON2_MAX_TIME 4
#define LS_ARGON2_MIN_MEMORY_KIB (8 * 1024)
#define LS_ARGON2_MAX_MEMORY_KIB (64 * 1024)
#define LS_ARGON2_MAX_LANES 1

typedef struct {
    uint32_t time, memory_kib, lanes;
    unsigned char salt[64];
    size_t salt_length;
} LSPasswordParameters;

// login_secret_crypto.c
int ls_random(unsigned char *buffer, size_t count);
EVP_PKEY *ls_new_key(void);
int ls_public_point(EVP_PKEY *key, unsigned char point[LS_POINT_BYTES]);
int ls_ecies_decrypt(EVP_PKEY *key, const unsigned char *ciphertext, size_t length, unsigned char *plaintext, size_t plaintext_length);
int ls_ecies_encrypt(const unsigned char recipient[LS_POINT_BYTES], const unsigned char *plaintext, size_t length, unsigned char *out);
int ls_sign(EVP_PKEY *key, const unsigned char *message, size_t length, unsigned char *signature, size_t *signature_length);
/// d from the password (Argon2id under the machine's lock, then HKDF to a scalar); NULL on failure.
EVP_PKEY *ls_password_key(const char *password, const LSPasswordParameters *parameters);
/// d from a 32-byte seed (the Argon2id output): HKDF-SHA256 with a counter until a valid scalar.
EVP_PKEY *ls_key_from_seed(const unsigned char seed[32]);

// login_secret.c
/// The fingerprint line: a nonce for VerifyUser, and after a match, the
/// nonce kept for the keyring line of the same transaction.
int ls_make_nonce(unsigned char nonce[LS_NONCE_BYTES]);
void ls_remember_match(pam_handle_t *pamh, const char *user, const unsigned char nonce[LS_NONCE_BYTES]);
/// auth keyring-authtok / keyring-restore; password keyring.
int ls_keyring_authtok(pam_handle_t *pamh, const char *user, int password_verified, int debug);
int ls_keyring_restore(pam_handle_t *pamh);
int ls_keyring_chauthtok(pam_handle_t *pamh, int flags, const char *user, int debug);

#endif
