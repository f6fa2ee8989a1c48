// The login secret in pam_localauth (docs/KEYRING.md, docs/PAM.md "The login keyring").
//
//   auth optional pam_localauth.so keyring-authtok
//       For a user with a login secret: after this transaction's fingerprint
//       match (the module's own VerifyUser, which sent a nonce), K from
//       ReleaseLoginSecret (ECIES to a key made here); after a password
//       pam_unix verified for this user in this pass, K from the password
//       wrap (Argon2id in one of the machine's slots: login_secret_argon2.c).
//       Then PAM_AUTHTOK := hex(K)
//       for the next line (pam_gnome_keyring), the typed password kept.
//   auth optional pam_localauth.so keyring-restore
//       PAM_AUTHTOK := the typed password again (none after a finger).
//   password optional pam_localauth.so keyring
//       passwd's re-wrap: login_secret_passwd.c.
// Every other user: PAM_IGNORE, nothing changed. K is never written
// anywhere but PAM_AUTHTOK for that one line; buffers are cleansed.
#include "login_secret.h"

#include <openssl/crypto.h>
#include <pwd.h>
#include <security/pam_ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#define MATCH_DATA "pam_localauth_login_match"
#define SAVED_AUTHTOK_DATA "pam_localauth_saved_authtok"

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

/// A match belongs to the authenticate pass that saw it: a pass that matched
/// and then failed (a later module refused) must not leave it to the next
/// pass of the same handle, whose keyring line would present a spent or
/// expired nonce instead of trying the password that pass verified.
void ls_forget_match(pam_handle_t *pamh) {
    const void *data = NULL;
    if (pam_get_data(pamh, MATCH_DATA, &data) == PAM_SUCCESS && data != NULL) pam_set_data(pamh, MATCH_DATA, NULL, NULL);
}

int ls_user_uid(const char *user, uid_t *uid) {
    struct passwd entry, *found = NULL;
    char buffer[4096];
    if (getpwnam_r(user, &entry, buffer, sizeof buffer, &found) != 0 || found == NULL) return 0;
    *uid = found->pw_uid;
    return 1;
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
    DBusMessage *call = ls_new_call("ReleaseLoginSecret", user);
    DBusMessageIter args, dict;
    int ok = 0;
    if (call) {
        dbus_message_iter_init_append(call, &args);
        ok = ls_append_bytes(&args, match ? match->nonce : no_nonce, match ? LS_NONCE_BYTES : 0) && ls_append_bytes(&args, point, LS_POINT_BYTES) &&
             dbus_message_iter_open_container(&args, DBUS_TYPE_ARRAY, "{sv}", &dict) && dbus_message_iter_close_container(&args, &dict);
    }
    if (!ok) {
        if (call) dbus_message_unref(call);
        EVP_PKEY_free(ephemeral);
        return 0;
    }
    char error_name[256] = "";
    DBusMessage *reply = ls_send_call(bus, call, error_name, sizeof error_name);
    ok = 0;
    if (reply) {
        const unsigned char *sealed = NULL;
        int count = 0;
        ok = ls_entry_get_bytes(reply, "secret", &sealed, &count) &&
             ls_ecies_decrypt(ephemeral, sealed, (size_t)count, secret, LS_SECRET_BYTES);
        if (ok && ls_entry_get_bool(reply, "password-wrap-renewed")) {
            pam_info(pamh, "Your keyring now opens with your new password too.");
        }
        dbus_message_unref(reply);
    } else if (!ls_is_error(error_name, "NoSecret") && (match || !ls_is_error(error_name, "NotAuthorized"))) {
        pam_syslog(pamh, LOG_NOTICE, "keyring: no login secret of %s after the fingerprint: %s", user, error_name);
    }
    EVP_PKEY_free(ephemeral);
    return ok;
}

// MARK: The password path

static int read_parameters(DBusMessage *reply, LSPasswordParameters *parameters) {
    const unsigned char *salt = NULL;
    int count = 0;
    if (!ls_entry_get_bytes(reply, "salt", &salt, &count) || count < 16 || count > (int)sizeof parameters->salt ||
        !ls_entry_get_u32(reply, "argon2-time", &parameters->time) || !ls_entry_get_u32(reply, "argon2-memory-kib", &parameters->memory_kib) ||
        !ls_entry_get_u32(reply, "argon2-lanes", &parameters->lanes)) return 0;
    // The PAM host's own ceiling, whatever the service stored: a login never costs more than this.
    if (parameters->time < 1 || parameters->time > LS_ARGON2_MAX_TIME || parameters->memory_kib < LS_ARGON2_MIN_MEMORY_KIB ||
        parameters->memory_kib > LS_ARGON2_MAX_MEMORY_KIB || parameters->lanes < 1 || parameters->lanes > LS_ARGON2_MAX_LANES) return 0;
    memcpy(parameters->salt, salt, (size_t)count);
    parameters->salt_length = (size_t)count;
    return 1;
}

int ls_open_wrap(pam_handle_t *pamh, DBusMessage *reply, const char *user, uid_t uid, const char *password,
                 unsigned char secret[LS_SECRET_BYTES], EVP_PKEY **key_out) {
    LSPasswordParameters parameters;
    const unsigned char *wrap = NULL;
    int count = 0, no_slot = 0;
    if (!read_parameters(reply, &parameters)) {
        pam_syslog(pamh, LOG_WARNING, "keyring: the password wrap of %s asks for Argon2id parameters this module does not run", user);
        return 0;
    }
    if (!ls_entry_get_bytes(reply, "password-wrap", &wrap, &count)) return 0;
    EVP_PKEY *key = ls_password_key(pamh, user, uid, password, &parameters, &no_slot);
    if (!key) return no_slot ? -1 : 0;
    int ok = ls_ecies_decrypt(key, wrap, (size_t)count, secret, LS_SECRET_BYTES);
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
    if (!ls_entry_get_bytes(reply, "reseal-key", &key, &count) || count != LS_POINT_BYTES ||
        !ls_ecies_encrypt(key, secret, LS_SECRET_BYTES, sealed)) return;
    DBusMessage *call = ls_new_call("ResealLoginSecret", user);
    DBusMessageIter args;
    if (!call) return;
    dbus_message_iter_init_append(call, &args);
    if (!ls_append_bytes(&args, sealed, (int)sizeof sealed)) {
        dbus_message_unref(call);
        return;
    }
    char error_name[256] = "";
    DBusMessage *answer = ls_send_call(bus, call, error_name, sizeof error_name);
    if (answer) {
        pam_syslog(pamh, LOG_NOTICE, "keyring: the login secret of %s was sealed again to this machine", user);
        dbus_message_unref(answer);
    } else {
        pam_syslog(pamh, LOG_WARNING, "keyring: resealing the login secret of %s failed: %s", user, error_name);
    }
}

static int unwrap_with_password(pam_handle_t *pamh, DBusConnection *bus, const char *user, unsigned char secret[LS_SECRET_BYTES], int debug) {
    const void *item = NULL;
    uid_t uid;
    if (pam_get_item(pamh, PAM_AUTHTOK, &item) != PAM_SUCCESS || item == NULL || !ls_user_uid(user, &uid)) return 0;
    DBusMessage *reply = ls_password_wrap(pamh, bus, user);
    if (!reply) return 0;
    int ok = 0;
    if (ls_entry_get_bool(reply, "password-wrap-stale")) {
        // A passwd whose re-wrap could not run left no new key: this
        // verified password's becomes the pending one, for the owner's next finger.
        if (!ls_entry_get_bool(reply, "pending") && ls_change_password(pamh, bus, user, uid, item, NULL, debug)) {
            pam_syslog(pamh, LOG_NOTICE, "keyring: the verified password of %s waits for the owner's finger to open the keyring", user);
        }
        pam_info(pamh, "Your keyring still uses your previous password: "
                       "log in once with your fingerprint, or unlock the keyring with your previous password.");
    } else {
        int opened = ls_open_wrap(pamh, reply, user, uid, item, secret, NULL);
        if (opened == 1) {
            ok = 1;
            if (!ls_entry_get_bool(reply, "machine-wrap-ok")) reseal(pamh, bus, reply, user, secret);
        } else if (opened == 0) {
            pam_syslog(pamh, LOG_NOTICE, "keyring: the password wrap of %s does not open with the verified password", user);
        }
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
    DBusConnection *bus = ls_bus_open(pamh);
    if (!bus) return PAM_IGNORE;
    unsigned char secret[LS_SECRET_BYTES];
    // Our own match; else (or if the match's release was refused) a password
    // pam_unix verified in this pass; else perhaps pam_fprintd's match.
    int ok = match ? release(pamh, bus, user, match, secret) : 0;
    if (!ok) ok = password_verified ? unwrap_with_password(pamh, bus, user, secret, debug) : !match && release(pamh, bus, user, NULL, secret);
    if (!ok && debug) pam_syslog(pamh, LOG_DEBUG, "keyring: no login secret of %s in this transaction", user);
    ls_bus_close(bus);
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
