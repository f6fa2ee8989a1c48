// passwd and the login secret (docs/KEYRING.md, "passwd, and a reset by root"):
//
//   password optional pam_localauth.so keyring
//       At PAM_UPDATE_AUTHTOK: the password wrap follows the new password
//       (the old one as proof), or waits for the owner's finger (root's
//       reset). A re-wrap that cannot run (no Argon2id slot within 10 s,
//       this account's own derivation held by a stopped process, the
//       service refusing) is logged, and the wrap is marked stale: the next
//       password login offers the new password's key for the owner's finger. Always PAM_IGNORE: no jump (a jump past
//       the stack's end fails passwd), and the tokens are left alone for
//       pam_ecryptfs and the others. pam_gnome_keyring's line after it
//       cannot change the keyring: it only ever holds login passwords, and
//       the keyring's password is K.
#include "login_secret.h"

#include <openssl/crypto.h>
#include <security/pam_ext.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

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

/// The options of ChangeLoginSecretPassword: the new key, or only `stale`.
static int append_change(DBusMessage *call, const unsigned char point[LS_POINT_BYTES], const LSPasswordParameters *parameters,
                         const unsigned char *signature, size_t signature_length) {
    DBusMessageIter args, dict;
    dbus_message_iter_init_append(call, &args);
    if (!dbus_message_iter_open_container(&args, DBUS_TYPE_ARRAY, "{sv}", &dict)) return 0;
    int ok = point ? ls_entry_bytes(&dict, "password-key", point, LS_POINT_BYTES) &&
                         ls_entry_bytes(&dict, "salt", parameters->salt, (int)parameters->salt_length) &&
                         ls_entry_u32(&dict, "argon2-time", parameters->time) &&
                         ls_entry_u32(&dict, "argon2-memory-kib", parameters->memory_kib) &&
                         ls_entry_u32(&dict, "argon2-lanes", parameters->lanes) &&
                         (!signature || ls_entry_bytes(&dict, "proof", signature, (int)signature_length))
                   : ls_entry_bool(&dict, "stale", 1);
    return dbus_message_iter_close_container(&args, &dict) && ok;
}

int ls_change_password(pam_handle_t *pamh, DBusConnection *bus, const char *user, uid_t uid, const char *password, EVP_PKEY *old_key,
                       int debug) {
    LSPasswordParameters parameters = { LS_ARGON2_TIME, LS_ARGON2_MEMORY_KIB, LS_ARGON2_LANES, { 0 }, LS_SALT_BYTES };
    unsigned char point[LS_POINT_BYTES], message[512], signature[128];
    size_t signature_length = sizeof signature;
    int no_slot = 0, ok = 1;
    EVP_PKEY *new_key = NULL;
    if (password) {
        new_key = ls_random(parameters.salt, LS_SALT_BYTES) ? ls_password_key(pamh, user, uid, password, &parameters, &no_slot) : NULL;
        const char *sender = dbus_bus_get_unique_name(bus);
        ok = new_key && ls_public_point(new_key, point) && sender;
        size_t message_length = ok ? proof_message(message, sizeof message, uid, sender, point, parameters.salt, LS_SALT_BYTES) : 0;
        if (!(ok && old_key && message_length > 0 && ls_sign(old_key, message, message_length, signature, &signature_length))) {
            signature_length = 0;
        }
        EVP_PKEY_free(new_key);
    }
    if (password && !ok) {
        pam_syslog(pamh, LOG_ERR, "keyring: no key of the new password of %s%s", user, no_slot ? " (no Argon2id derivation now)" : "");
        return 0;
    }
    DBusMessage *call = ok ? ls_new_call("ChangeLoginSecretPassword", user) : NULL;
    if (!call || !append_change(call, password ? point : NULL, &parameters, signature_length ? signature : NULL, signature_length)) {
        if (call) dbus_message_unref(call);
        pam_syslog(pamh, LOG_ERR, "keyring: the password wrap of %s was not changed: no call could be made", user);
        return 0;
    }
    char error_name[256] = "";
    DBusMessage *reply = ls_send_call(bus, call, error_name, sizeof error_name);
    if (!reply) {
        pam_syslog(pamh, LOG_ERR, "keyring: the password wrap of %s was not changed: %s", user, error_name);
        return 0;
    }
    if (!password) {
        pam_syslog(pamh, LOG_WARNING, "keyring: the password wrap of %s is marked stale", user);
    } else if (ls_entry_get_bool(reply, "pending")) {
        pam_info(pamh, "Your keyring will open with the new password after your next fingerprint login.");
    } else if (debug) {
        pam_syslog(pamh, LOG_DEBUG, "keyring: the password wrap of %s follows the new password", user);
    }
    dbus_message_unref(reply);
    return 1;
}

int ls_keyring_chauthtok(pam_handle_t *pamh, int flags, const char *user, int debug) {
    if (geteuid() != 0 || !(flags & PAM_UPDATE_AUTHTOK)) return PAM_IGNORE;
    const void *old = NULL, *new = NULL;
    uid_t uid;
    if (pam_get_item(pamh, PAM_AUTHTOK, &new) != PAM_SUCCESS || new == NULL || !ls_user_uid(user, &uid)) return PAM_IGNORE;
    pam_get_item(pamh, PAM_OLDAUTHTOK, &old);
    DBusConnection *bus = ls_bus_open(pamh);
    if (!bus) return PAM_IGNORE;
    DBusMessage *wrap = ls_password_wrap(pamh, bus, user);
    if (!wrap) {
        ls_bus_close(bus);
        return PAM_IGNORE;   // no login secret: pam_gnome_keyring changes the keyring as always
    }
    // The old password proves itself by opening the wrap.
    EVP_PKEY *old_key = NULL;
    unsigned char secret[LS_SECRET_BYTES];
    int opened = old ? ls_open_wrap(pamh, wrap, user, uid, old, secret, &old_key) : 0;
    OPENSSL_cleanse(secret, sizeof secret);
    dbus_message_unref(wrap);
    // Whatever kept the wrap from following the new password (no Argon2id
    // slot, the service's refusal), it is now under a password that is no
    // longer the account's: say so, and mark it stale.
    if (opened < 0 || !ls_change_password(pamh, bus, user, uid, new, opened == 1 ? old_key : NULL, debug)) {
        pam_syslog(pamh, LOG_ERR, "keyring: the password wrap of %s cannot follow the new password now; marking it stale", user);
        ls_change_password(pamh, bus, user, uid, NULL, NULL, debug);
    }
    EVP_PKEY_free(old_key);
    ls_bus_close(bus);
    return PAM_IGNORE;
}
