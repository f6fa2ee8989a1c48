// The login secret in pam_localauth (docs/KEYRING.md): the fingerprint
// path's release, the password path's Argon2id unwrap, the scoped
// PAM_AUTHTOK around pam_gnome_keyring, and passwd's re-wrap. Internal to
// the module (hidden visibility).
#ifndef PAM_LOCALAUTH_LOGIN_SECRET_H
#define PAM_LOCALAUTH_LOGIN_SECRET_H

#include <dbus/dbus.h>
#include <openssl/evp.h>
#include <security/pam_modules.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LS_POINT_BYTES 65
#define LS_SECRET_BYTES 32
#define LS_NONCE_BYTES 32
/// Argon2id's slots and per-account locks (login_secret_argon2.c): flocks on
/// files in this directory (root 0700), waited for at most LS_LOCK_SECONDS.
#define LS_ARGON2_DIR "/run/pam_localauth"
#define LS_LOCK_SECONDS 10
/// Derivations running at once on the machine (stopped holders not counted),
/// and slot files in all (which bound the memory stopped holders keep: 64 MiB each).
#define LS_ARGON2_RUNNING 2
#define LS_ARGON2_SLOTS 8
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

// login_secret_argon2.c
typedef struct {
    int user, slot;
} LSArgon2Lease;
enum { LS_ARGON2_OK, LS_ARGON2_BUSY, LS_ARGON2_STOPPED, LS_ARGON2_ERROR };
/// Takes `uid`'s lock and a slot (LS_ARGON2_OK), or says in `why` why not.
int ls_argon2_enter(uid_t uid, LSArgon2Lease *lease, char *why, size_t size);
void ls_argon2_leave(LSArgon2Lease *lease);

// login_secret_crypto.c
int ls_random(unsigned char *buffer, size_t count);
EVP_PKEY *ls_new_key(void);
int ls_public_point(EVP_PKEY *key, unsigned char point[LS_POINT_BYTES]);
int ls_ecies_decrypt(EVP_PKEY *key, const unsigned char *ciphertext, size_t length, unsigned char *plaintext, size_t plaintext_length);
int ls_ecies_encrypt(const unsigned char recipient[LS_POINT_BYTES], const unsigned char *plaintext, size_t length, unsigned char *out);
int ls_sign(EVP_PKEY *key, const unsigned char *message, size_t length, unsigned char *signature, size_t *signature_length);
/// d from `user`'s password (Argon2id holding `uid`'s lock and a slot, then
/// HKDF to a scalar); NULL on failure, with *no_slot set (and the reason
/// logged) when the derivation could not run.
EVP_PKEY *ls_password_key(pam_handle_t *pamh, const char *user, uid_t uid, const char *password, const LSPasswordParameters *parameters,
                          int *no_slot);
/// d from a 32-byte seed (the Argon2id output): HKDF-SHA256 with a counter until a valid scalar.
EVP_PKEY *ls_key_from_seed(const unsigned char seed[32]);

// login_secret_bus.c
DBusConnection *ls_bus_open(pam_handle_t *pamh);
void ls_bus_close(DBusConnection *bus);
/// Sends `call` (unreffed here); the reply, or NULL with the error's name in `error_name`.
DBusMessage *ls_send_call(DBusConnection *bus, DBusMessage *call, char *error_name, size_t size);
int ls_append_bytes(DBusMessageIter *iter, const unsigned char *bytes, int count);
int ls_entry_bytes(DBusMessageIter *dict, const char *key, const unsigned char *bytes, int count);
int ls_entry_u32(DBusMessageIter *dict, const char *key, dbus_uint32_t value);
int ls_entry_bool(DBusMessageIter *dict, const char *key, int value);
/// ay of `key` in the reply's a{sv}: a pointer into the reply and its length; 0 if absent or of another type.
int ls_entry_get_bytes(DBusMessage *reply, const char *key, const unsigned char **bytes, int *count);
int ls_entry_get_u32(DBusMessage *reply, const char *key, dbus_uint32_t *number);
int ls_entry_get_bool(DBusMessage *reply, const char *key);
/// A call of ours with `user` as its first argument.
DBusMessage *ls_new_call(const char *method, const char *user);
int ls_is_error(const char *name, const char *suffix);
/// GetLoginSecretPasswordWrap(user); NULL if the user has none (or the service is not there).
DBusMessage *ls_password_wrap(pam_handle_t *pamh, DBusConnection *bus, const char *user);

// login_secret.c
/// The fingerprint line: a nonce for VerifyUser, and after a match, the
/// nonce kept for the keyring line of the same transaction; forgotten at
/// the start of every authenticate pass.
int ls_make_nonce(unsigned char nonce[LS_NONCE_BYTES]);
void ls_remember_match(pam_handle_t *pamh, const char *user, const unsigned char nonce[LS_NONCE_BYTES]);
void ls_forget_match(pam_handle_t *pamh);
/// The account's uid; 0 if there is no such account.
int ls_user_uid(const char *user, uid_t *uid);
/// K from the password wrap in `reply` with `password`: 1; 0 if it does not
/// open; -1 if the derivation could not run (logged). `key_out` gets d.
int ls_open_wrap(pam_handle_t *pamh, DBusMessage *reply, const char *user, uid_t uid, const char *password,
                 unsigned char secret[LS_SECRET_BYTES], EVP_PKEY **key_out);
/// auth keyring-authtok / keyring-restore; password keyring.
int ls_keyring_authtok(pam_handle_t *pamh, const char *user, int password_verified, int debug);
int ls_keyring_restore(pam_handle_t *pamh);

// login_secret_passwd.c
int ls_keyring_chauthtok(pam_handle_t *pamh, int flags, const char *user, int debug);
/// ChangeLoginSecretPassword for `user` with the key `password` gives (a
/// new salt, the standard parameters), signed by `old_key` if any; or, with
/// `password` NULL, only the mark that the wrap is stale. 1 if the service took it.
int ls_change_password(pam_handle_t *pamh, DBusConnection *bus, const char *user, uid_t uid, const char *password, EVP_PKEY *old_key,
                       int debug);

#endif
