// The login secret in pam_localauth (docs/KEYRING.md, docs/PAM.md "The login keyring").
//
//   auth optional pam_localauth.so keyring-authtok
//       For a user with a login secret: after this transaction's fingerprint
//       match (the module's own VerifyUser, which sent a nonce), K from
//       ReleaseLoginSecret (ECIES to a key made here); after a password
//       pam_unix verified for this user in this pass, K from the password
//       wrap (Argon2id under the machine's lock). Then PAM_AUTHTOK := hex(K)
//       for the next line (pam_gnome_keyring), the typed password kept.
//   auth optional pam_localauth.so keyring-restore
//       PAM_AUTHTOK := the typed password again (none after a finger).
//   password optional pam_localauth.so keyring
//       At PAM_UPDATE_AUTHTOK: the password wrap follows the new password
//       (the old one as proof), or waits for the owner's finger (root's
//       reset). Always PAM_IGNORE: no jump (a jump past the stack's end
//       fails passwd), and the tokens are left alone for pam_ecryptfs and
//       the others. pam_gnome_keyring's line after it cannot change the
//       keyring: it only ever holds login passwords, and the keyring's
//       password is K.
// Every other user: PAM_IGNORE, nothing changed. K is never written
// anywhere but PAM_AUTHTOK for that one line; buffers are cleansed.
#include "login_secret.h"

#include <dbus/dbus.h>
#include <openssl/crypto.h>
#include <pwd.h>
#include <security/pam_ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#define SERVICE "org.example.LocalAuth"
#define OBJECT "/org/example/LocalAuth"
#define INTERFACE "org.example.LocalAuth"
#define ERROR_PREFIX "org.example.LocalAuth.Error."
#define MATCH_DATA "pam_localauth_login_match"
#define SAVED_AUTHTOK_DATA "pam_localauth_saved_authtok"
#define CALL_TIMEOUT_MS 10000

// MARK: The match of this transaction

typedef struct {
    unsigned char nonce[LS_NONCE_BYTES];
    char user[];
} Match;

static void free_cleansed(pam_handle_t *pamh, void *data, int error_status) {
    (void)pamh;
    (void)error_status;
    if (data) OPENSSL_cleanse(data, sizeof(Match));
    free(data);
}

int ls_make_nonce(unsigned char nonce[LS_NONCE_BYTES]) {
    return ls_random(nonce, LS_NONCE_BYTES);
}

void ls_remember_match(pam_handle_t *pamh, const char *user, const unsigned char nonce[LS_NONCE_BYTES]) {
    size_t length = strlen(user);
    Match *match = malloc(sizeof(Match) + length + 1);
    if (!match) return;
    memcpy(match->nonce, nonce, LS_NONCE_BYTES);
    memcpy(match->user, user, length + 1);
    if (pam_set_data(pamh, MATCH_DATA, match, free_cleansed) != PAM_SUCCESS) free(match);
}

// MARK: The bus

static DBusConnection *bus_open(pam_handle_t *pamh) {
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *bus = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error);
    if (!bus) {
        pam_syslog(pamh, LOG_INFO, "keyring: no system bus: %s", error.message ? error.message : "?");
        dbus_error_free(&error);
        return NULL;
    }
    dbus_connection_set_exit_on_disconnect(bus, FALSE);
    return bus;
}

static void bus_close(DBusConnection *bus) {
    dbus_connection_close(bus);
    dbus_connection_unref(bus);
}

/// Sends `call` (unreffed here); the reply, or NULL with the error's name in `error_name`.
static DBusMessage *send_call(DBusConnection *bus, DBusMessage *call, char *error_name, size_t size) {
    DBusError error;
    dbus_error_init(&error);
    DBusMessage *reply = dbus_connection_send_with_reply_and_block(bus, call, CALL_TIMEOUT_MS, &error);
    dbus_message_unref(call);
    if (!reply) snprintf(error_name, size, "%s", error.name ? error.name : "?");
    dbus_error_free(&error);
    return reply;
}

static int append_bytes(DBusMessageIter *iter, const unsigned char *bytes, int count) {
    DBusMessageIter array;
    return dbus_message_iter_open_container(iter, DBUS_TYPE_ARRAY, "y", &array) &&
           dbus_message_iter_append_fixed_array(&array, DBUS_TYPE_BYTE, &bytes, count) &&
           dbus_message_iter_close_container(iter, &array);
}

static int entry_bytes(DBusMessageIter *dict, const char *key, const unsigned char *bytes, int count) {
    DBusMessageIter entry, variant;
    return dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry) &&
           dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key) &&
           dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "ay", &variant) && append_bytes(&variant, bytes, count) &&
           dbus_message_iter_close_container(&entry, &variant) && dbus_message_iter_close_container(dict, &entry);
}

static int entry_u32(DBusMessageIter *dict, const char *key, dbus_uint32_t value) {
    DBusMessageIter entry, variant;
    return dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry) &&
           dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key) &&
           dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "u", &variant) &&
           dbus_message_iter_append_basic(&variant, DBUS_TYPE_UINT32, &value) &&
           dbus_message_iter_close_container(&entry, &variant) && dbus_message_iter_close_container(dict, &entry);
}

/// The value of `key` in the reply's first argument, an a{sv}: the
/// iterator is left on the variant's contents. 0 if absent.
static int find_entry(DBusMessage *reply, const char *key, DBusMessageIter *value) {
    DBusMessageIter args, dict, entry, variant;
    if (!dbus_message_iter_init(reply, &args) || dbus_message_iter_get_arg_type(&args) != DBUS_TYPE_ARRAY) return 0;
    dbus_message_iter_recurse(&args, &dict);
    while (dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY) {
        const char *name = NULL;
        dbus_message_iter_recurse(&dict, &entry);
        dbus_message_iter_get_basic(&entry, &name);
        if (strcmp(name, key) == 0 && dbus_message_iter_next(&entry) && dbus_message_iter_get_arg_type(&entry) == DBUS_TYPE_VARIANT) {
            dbus_message_iter_recurse(&entry, &variant);
            *value = variant;
            return 1;
        }
        dbus_message_iter_next(&dict);
    }
    return 0;
}

/// ay of `key`: a pointer into the reply and its length; 0 if absent or of another type.
static int entry_get_bytes(DBusMessage *reply, const char *key, const unsigned char **bytes, int *count) {
    DBusMessageIter value, array;
    if (!find_entry(reply, key, &value) || dbus_message_iter_get_arg_type(&value) != DBUS_TYPE_ARRAY ||
        dbus_message_iter_get_element_type(&value) != DBUS_TYPE_BYTE) return 0;
    dbus_message_iter_recurse(&value, &array);
    dbus_message_iter_get_fixed_array(&array, bytes, count);
    return 1;
}

static int entry_get_u32(DBusMessage *reply, const char *key, dbus_uint32_t *number) {
    DBusMessageIter value;
    if (!find_entry(reply, key, &value) || dbus_message_iter_get_arg_type(&value) != DBUS_TYPE_UINT32) return 0;
    dbus_message_iter_get_basic(&value, number);
    return 1;
}

static int entry_get_bool(DBusMessage *reply, const char *key) {
    DBusMessageIter value;
    dbus_bool_t flag = FALSE;
    if (!find_entry(reply, key, &value) || dbus_message_iter_get_arg_type(&value) != DBUS_TYPE_BOOLEAN) return 0;
    dbus_message_iter_get_basic(&value, &flag);
    return flag ? 1 : 0;
}

static DBusMessage *new_call(const char *method, const char *user) {
    DBusMessage *call = dbus_message_new_method_call(SERVICE, OBJECT, INTERFACE, method);
    if (call && !dbus_message_append_args(call, DBUS_TYPE_STRING, &user, DBUS_TYPE_INVALID)) {
        dbus_message_unref(call);
        return NULL;
    }
    return call;
}

static int is_error(const char *name, const char *suffix) {
    return strncmp(name, ERROR_PREFIX, strlen(ERROR_PREFIX)) == 0 && strcmp(name + strlen(ERROR_PREFIX), suffix) == 0;
}

// MARK: The fingerprint path

/// K from ReleaseLoginSecret for this transaction's match, as ECIES to a key
/// made here. Without a match of our own (NULL), the empty nonce: the
/// service may have seen pam_fprintd's match from this process through its
/// own fprintd interface (localauthd --fprintd), and decides.
static int release(pam_handle_t *pamh, DBusConnection *bus, const char *user, const Match *match, unsigned char secret[LS_SECRET_BYTES]) {
    static const unsigned char no_nonce[1] = { 0 };
    EVP_PKEY *ephemeral = ls_new_key();
    unsigned char point[LS_POINT_BYTES];
    if (!ephemeral || !ls_public_point(ephemeral, point)) {
        EVP_PKEY_free(ephemeral);
        return 0;
    }
    DBusMessage *call = new_call("ReleaseLoginSecret", user);
    DBusMessageIter args, dict;
    int ok = 0;
    if (call) {
        dbus_message_iter_init_append(call, &args);
        ok = append_bytes(&args, match ? match->nonce : no_nonce, match ? LS_NONCE_BYTES : 0) && append_bytes(&args, point, LS_POINT_BYTES) &&
             dbus_message_iter_open_container(&args, DBUS_TYPE_ARRAY, "{sv}", &dict) && dbus_message_iter_close_container(&args, &dict);
    }
    if (!ok) {
        if (call) dbus_message_unref(call);
        EVP_PKEY_free(ephemeral);
        return 0;
    }
    char error_name[256] = "";
    DBusMessage *reply = send_call(bus, call, error_name, sizeof error_name);
    ok = 0;
    if (reply) {
        const unsigned char *sealed = NULL;
        int count = 0;
        ok = entry_get_bytes(reply, "secret", &sealed, &count) &&
             ls_ecies_decrypt(ephemeral, sealed, (size_t)count, secret, LS_SECRET_BYTES);
        if (ok && entry_get_bool(reply, "password-wrap-renewed")) {
            pam_info(pamh, "Your keyring now opens with your new password too.");
        }
        dbus_message_unref(reply);
    } else if (!is_error(error_name, "NoSecret") && (match || !is_error(error_name, "NotAuthorized"))) {
        pam_syslog(pamh, LOG_NOTICE, "keyring: no login secret of %s after the fingerprint: %s", user, error_name);
    }
    EVP_PKEY_free(ephemeral);
    return ok;
}

// MARK: The password path

static int read_parameters(DBusMessage *reply, LSPasswordParameters *parameters) {
    const unsigned char *salt = NULL;
    int count = 0;
    if (!entry_get_bytes(reply, "salt", &salt, &count) || count < 16 || count > (int)sizeof parameters->salt ||
        !entry_get_u32(reply, "argon2-time", &parameters->time) || !entry_get_u32(reply, "argon2-memory-kib", &parameters->memory_kib) ||
        !entry_get_u32(reply, "argon2-lanes", &parameters->lanes)) return 0;
    // The PAM host's own ceiling, whatever the service stored: a login never costs more than this.
    if (parameters->time < 1 || parameters->time > LS_ARGON2_MAX_TIME || parameters->memory_kib < LS_ARGON2_MIN_MEMORY_KIB ||
        parameters->memory_kib > LS_ARGON2_MAX_MEMORY_KIB || parameters->lanes < 1 || parameters->lanes > LS_ARGON2_MAX_LANES) return 0;
    memcpy(parameters->salt, salt, (size_t)count);
    parameters->salt_length = (size_t)count;
    return 1;
}

/// GetLoginSecretPasswordWrap(user); NULL if the user has none (or the service is not there).
static DBusMessage *password_wrap(pam_handle_t *pamh, DBusConnection *bus, const char *user) {
    DBusMessage *call = new_call("GetLoginSecretPasswordWrap", user);
    DBusMessageIter args, dict;
    if (!call) return NULL;
    dbus_message_iter_init_append(call, &args);
    if (!dbus_message_iter_open_container(&args, DBUS_TYPE_ARRAY, "{sv}", &dict) || !dbus_message_iter_close_container(&args, &dict)) {
        dbus_message_unref(call);
        return NULL;
    }
    char error_name[256] = "";
    DBusMessage *reply = send_call(bus, call, error_name, sizeof error_name);
    if (!reply && !is_error(error_name, "NoSecret")) pam_syslog(pamh, LOG_INFO, "keyring: no password wrap for %s: %s", user, error_name);
    return reply;
}

/// K from the password wrap with `password`; 0 if it does not open.
static int open_wrap(DBusMessage *reply, const char *password, unsigned char secret[LS_SECRET_BYTES], EVP_PKEY **key_out) {
    LSPasswordParameters parameters;
    const unsigned char *wrap = NULL;
    int count = 0;
    if (!read_parameters(reply, &parameters) || !entry_get_bytes(reply, "password-wrap", &wrap, &count)) return 0;
    EVP_PKEY *key = ls_password_key(password, &parameters);
    int ok = key && ls_ecies_decrypt(key, wrap, (size_t)count, secret, LS_SECRET_BYTES);
    if (ok && key_out) {
        *key_out = key;
    } else {
        EVP_PKEY_free(key);
    }
    return ok;
}

/// The machine wrap no longer opens: K back to the service, for the reseal key it offered.
static void reseal(pam_handle_t *pamh, DBusConnection *bus, DBusMessage *reply, const char *user, const unsigned char secret[LS_SECRET_BYTES]) {
    const unsigned char *key = NULL;
    int count = 0;
    unsigned char sealed[LS_POINT_BYTES + LS_SECRET_BYTES + 16];
    if (!entry_get_bytes(reply, "reseal-key", &key, &count) || count != LS_POINT_BYTES ||
        !ls_ecies_encrypt(key, secret, LS_SECRET_BYTES, sealed)) return;
    DBusMessage *call = new_call("ResealLoginSecret", user);
    DBusMessageIter args;
    if (!call) return;
    dbus_message_iter_init_append(call, &args);
    if (!append_bytes(&args, sealed, (int)sizeof sealed)) {
        dbus_message_unref(call);
        return;
    }
    char error_name[256] = "";
    DBusMessage *answer = send_call(bus, call, error_name, sizeof error_name);
    if (answer) {
        pam_syslog(pamh, LOG_NOTICE, "keyring: the login secret of %s was sealed again to this machine", user);
        dbus_message_unref(answer);
    } else {
        pam_syslog(pamh, LOG_WARNING, "keyring: resealing the login secret of %s failed: %s", user, error_name);
    }
}

static int unwrap_with_password(pam_handle_t *pamh, DBusConnection *bus, const char *user, unsigned char secret[LS_SECRET_BYTES]) {
    const void *item = NULL;
    if (pam_get_item(pamh, PAM_AUTHTOK, &item) != PAM_SUCCESS || item == NULL) return 0;
    DBusMessage *reply = password_wrap(pamh, bus, user);
    if (!reply) return 0;
    int ok = 0;
    if (entry_get_bool(reply, "password-wrap-stale")) {
        pam_info(pamh, "Your keyring still uses your previous password (it was reset by an administrator): "
                       "log in once with your fingerprint, or unlock the keyring with your previous password.");
    } else if (open_wrap(reply, item, secret, NULL)) {
        ok = 1;
        if (!entry_get_bool(reply, "machine-wrap-ok")) reseal(pamh, bus, reply, user, secret);
    } else {
        pam_syslog(pamh, LOG_NOTICE, "keyring: the password wrap of %s does not open with the verified password", user);
    }
    dbus_message_unref(reply);
    return ok;
}

// MARK: The scoped authtok

typedef struct {
    int had;
    char *authtok;
} SavedAuthtok;

static void free_saved(pam_handle_t *pamh, void *data, int error_status) {
    (void)pamh;
    (void)error_status;
    SavedAuthtok *saved = data;
    if (saved->authtok) {
        OPENSSL_cleanse(saved->authtok, strlen(saved->authtok));
        free(saved->authtok);
    }
    free(saved);
}

int ls_keyring_authtok(pam_handle_t *pamh, const char *user, int password_verified, int debug) {
    if (geteuid() != 0) return PAM_IGNORE;
    const void *data = NULL;
    const Match *match = NULL;
    if (pam_get_data(pamh, MATCH_DATA, &data) == PAM_SUCCESS && data != NULL && strcmp(((const Match *)data)->user, user) == 0) match = data;
    DBusConnection *bus = bus_open(pamh);
    if (!bus) return PAM_IGNORE;
    unsigned char secret[LS_SECRET_BYTES];
    // Our own match; else a password pam_unix verified; else perhaps pam_fprintd's match.
    int ok = match ? release(pamh, bus, user, match, secret)
             : password_verified ? unwrap_with_password(pamh, bus, user, secret) : release(pamh, bus, user, NULL, secret);
    if (!ok && debug) pam_syslog(pamh, LOG_DEBUG, "keyring: no login secret of %s in this transaction", user);
    bus_close(bus);
    // One attempt per match: the service took the ticket anyway.
    if (match) pam_set_data(pamh, MATCH_DATA, NULL, NULL);
    if (!ok) return PAM_IGNORE;

    char hex[LS_SECRET_BYTES * 2 + 1];
    for (int i = 0; i < LS_SECRET_BYTES; i++) snprintf(hex + 2 * i, 3, "%02x", secret[i]);
    OPENSSL_cleanse(secret, sizeof secret);
    SavedAuthtok *saved = calloc(1, sizeof *saved);
    const void *typed = NULL;
    int result = PAM_IGNORE;
    if (saved && pam_get_item(pamh, PAM_AUTHTOK, &typed) == PAM_SUCCESS) {
        saved->had = typed != NULL;
        saved->authtok = typed ? strdup(typed) : NULL;
        if ((!saved->had || saved->authtok) && pam_set_data(pamh, SAVED_AUTHTOK_DATA, saved, free_saved) == PAM_SUCCESS) {
            saved = NULL;
            result = pam_set_item(pamh, PAM_AUTHTOK, hex) == PAM_SUCCESS ? PAM_SUCCESS : PAM_IGNORE;
        }
    }
    if (saved) free_saved(pamh, saved, 0);
    OPENSSL_cleanse(hex, sizeof hex);
    if (debug) pam_syslog(pamh, LOG_DEBUG, "keyring: the login secret of %s is the next line's authtok", user);
    return result;
}

int ls_keyring_restore(pam_handle_t *pamh) {
    const void *data = NULL;
    if (pam_get_data(pamh, SAVED_AUTHTOK_DATA, &data) != PAM_SUCCESS || data == NULL) return PAM_IGNORE;
    const SavedAuthtok *saved = data;
    int result = pam_set_item(pamh, PAM_AUTHTOK, saved->had ? saved->authtok : NULL);
    pam_set_data(pamh, SAVED_AUTHTOK_DATA, NULL, NULL);   // runs free_saved: the copy is cleansed
    return result == PAM_SUCCESS ? PAM_SUCCESS : PAM_IGNORE;
}

// MARK: passwd

/// The proof message: label ‖ 0 ‖ uid (4, big-endian) ‖ sender ‖ 0 ‖ D′ ‖ salt′ (LocalAuthLoginSecretBus.ProofLabel).
static size_t proof_message(unsigned char *out, size_t size, uid_t uid, const char *sender, const unsigned char point[LS_POINT_BYTES],
                            const unsigned char *salt, size_t salt_length) {
    static const char label[] = "org.example.LocalAuth login password change 1";
    size_t needed = sizeof label + 4 + strlen(sender) + 1 + LS_POINT_BYTES + salt_length;
    if (needed > size) return 0;
    size_t at = 0;
    memcpy(out, label, sizeof label);   // with its NUL
    at += sizeof label;
    out[at++] = (unsigned char)(uid >> 24);
    out[at++] = (unsigned char)(uid >> 16);
    out[at++] = (unsigned char)(uid >> 8);
    out[at++] = (unsigned char)uid;
    memcpy(out + at, sender, strlen(sender) + 1);
    at += strlen(sender) + 1;
    memcpy(out + at, point, LS_POINT_BYTES);
    at += LS_POINT_BYTES;
    memcpy(out + at, salt, salt_length);
    return at + salt_length;
}

static int user_uid(const char *user, uid_t *uid) {
    struct passwd entry, *found = NULL;
    char buffer[4096];
    if (getpwnam_r(user, &entry, buffer, sizeof buffer, &found) != 0 || found == NULL) return 0;
    *uid = found->pw_uid;
    return 1;
}

int ls_keyring_chauthtok(pam_handle_t *pamh, int flags, const char *user, int debug) {
    if (geteuid() != 0 || !(flags & PAM_UPDATE_AUTHTOK)) return PAM_IGNORE;
    const void *old = NULL, *new = NULL;
    uid_t uid;
    if (pam_get_item(pamh, PAM_AUTHTOK, &new) != PAM_SUCCESS || new == NULL || !user_uid(user, &uid)) return PAM_IGNORE;
    pam_get_item(pamh, PAM_OLDAUTHTOK, &old);
    DBusConnection *bus = bus_open(pamh);
    if (!bus) return PAM_IGNORE;
    DBusMessage *wrap = password_wrap(pamh, bus, user);
    if (!wrap) {
        bus_close(bus);
        return PAM_IGNORE;   // no login secret: pam_gnome_keyring changes the keyring as always
    }
    // The old password proves itself by opening the wrap.
    EVP_PKEY *old_key = NULL;
    unsigned char secret[LS_SECRET_BYTES];
    if (old == NULL || !open_wrap(wrap, old, secret, &old_key)) old_key = NULL;
    OPENSSL_cleanse(secret, sizeof secret);
    dbus_message_unref(wrap);

    LSPasswordParameters parameters = { LS_ARGON2_TIME, LS_ARGON2_MEMORY_KIB, LS_ARGON2_LANES, { 0 }, LS_SALT_BYTES };
    unsigned char point[LS_POINT_BYTES], message[512], signature[128];
    size_t signature_length = sizeof signature;
    EVP_PKEY *new_key = ls_random(parameters.salt, LS_SALT_BYTES) ? ls_password_key(new, &parameters) : NULL;
    const char *sender = dbus_bus_get_unique_name(bus);
    int ok = new_key && ls_public_point(new_key, point) && sender;
    size_t message_length = ok ? proof_message(message, sizeof message, uid, sender, point, parameters.salt, LS_SALT_BYTES) : 0;
    int proven = ok && old_key && message_length > 0 && ls_sign(old_key, message, message_length, signature, &signature_length);
    EVP_PKEY_free(new_key);
    EVP_PKEY_free(old_key);

    DBusMessage *call = ok ? new_call("ChangeLoginSecretPassword", user) : NULL;
    DBusMessageIter args, dict;
    if (call) {
        dbus_message_iter_init_append(call, &args);
        ok = dbus_message_iter_open_container(&args, DBUS_TYPE_ARRAY, "{sv}", &dict) &&
             entry_bytes(&dict, "password-key", point, LS_POINT_BYTES) && entry_bytes(&dict, "salt", parameters.salt, LS_SALT_BYTES) &&
             entry_u32(&dict, "argon2-time", parameters.time) && entry_u32(&dict, "argon2-memory-kib", parameters.memory_kib) &&
             entry_u32(&dict, "argon2-lanes", parameters.lanes) &&
             (!proven || entry_bytes(&dict, "proof", signature, (int)signature_length)) && dbus_message_iter_close_container(&args, &dict);
    }
    if (call && ok) {
        char error_name[256] = "";
        DBusMessage *reply = send_call(bus, call, error_name, sizeof error_name);
        if (reply) {
            if (entry_get_bool(reply, "pending")) {
                pam_info(pamh, "Your keyring will open with the new password after your next fingerprint login.");
            }
            if (debug) pam_syslog(pamh, LOG_DEBUG, "keyring: the password wrap of %s follows the new password", user);
            dbus_message_unref(reply);
        } else {
            pam_syslog(pamh, LOG_WARNING, "keyring: the password wrap of %s was not changed: %s", user, error_name);
        }
    } else if (call) {
        dbus_message_unref(call);
    }
    bus_close(bus);
    return PAM_IGNORE;
}
