// pam_localauth: verifies PAM_USER's fingerprint through localauthd.
//
//   auth [success=end default=ignore] pam_localauth.so [timeout=N] [debug]
//       Asks the service (VerifyUser, root callers only) and shows its
//       progress through the conversation. Success: PAM_SUCCESS. A finger
//       that does not match: PAM_AUTH_ERR. Anything that means "not now"
//       (no service, no reader, no print, a lockout, the lid closed, a
//       remote session, the time-out): PAM_AUTHINFO_UNAVAIL at once, so the
//       stack goes on to the password.
//   auth optional pam_localauth.so reset-lockout
//       Lifts the biometric lockout of the user whose password pam_unix
//       verified in this transaction, as Apple's passcode does: the module's
//       authenticate pass records PAM_USER as it is then (the user pam_unix
//       checks in that same pass); the reset happens in pam_sm_setcred
//       (which applications call after pam_authenticate succeeded), only if
//       pam_unix recorded success, and only for the recorded user, never for
//       PAM_USER as it is at setcred time: sudo sets PAM_USER to the target
//       user (root, or B for `sudo -u B`) before pam_setcred, and a
//       password proves only its own account. A typed password pam_unix
//       refused never resets anything, whatever the layout (docs/PAM.md).
//       Only in a root PAM host: a screen locker running as the user
//       (swaylock, i3lock) would need polkit's `manage` for ResetLockout,
//       and an administrator's password dialog right after the unlock.
//       Always PAM_IGNORE.
//   auth optional pam_localauth.so keyring-authtok | keyring-restore
//   password optional pam_localauth.so keyring
//       The login keyring opened with the login secret: login_secret.c,
//       docs/KEYRING.md.
//
// Every string the module sends is checked to be valid UTF-8 before libdbus
// sees it: libdbus aborts the process (sudo, login) on invalid UTF-8.
//
// Every D-Bus error name the service sends is in dbus/org.example.LocalAuth.xml.
#include "pam_localauth.h"

#include "login_secret.h"

#include <dbus/dbus.h>
#include <security/pam_ext.h>
#include <security/pam_modules.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

/// The module is built with hidden visibility; PAM finds only these.
#define EXPORTED __attribute__((visibility("default")))

#define SERVICE "org.example.LocalAuth"
#define OBJECT "/org/example/LocalAuth"
#define INTERFACE "org.example.LocalAuth"
#define ERROR_PREFIX "org.example.LocalAuth.Error."

typedef struct {
    int timeout;
    int reset_lockout;
    int keyring_authtok;
    int keyring_restore;
    int keyring;
    int debug;
} Options;

static Options parse_options(pam_handle_t *pamh, int argc, const char **argv) {
    Options options = { PAM_LOCALAUTH_DEFAULT_TIMEOUT, 0, 0, 0, 0, 0 };
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "timeout=", 8) == 0) {
            char *end = NULL;
            long value = strtol(argv[i] + 8, &end, 10);
            if (end && *end == '\0' && value >= 1 && value <= PAM_LOCALAUTH_MAX_TIMEOUT) {
                options.timeout = (int)value;
            } else {
                pam_syslog(pamh, LOG_WARNING, "ignoring %s (1 to %d seconds)", argv[i], PAM_LOCALAUTH_MAX_TIMEOUT);
            }
        } else if (strcmp(argv[i], "reset-lockout") == 0) {
            options.reset_lockout = 1;
        } else if (strcmp(argv[i], "keyring-authtok") == 0) {
            options.keyring_authtok = 1;
        } else if (strcmp(argv[i], "keyring-restore") == 0) {
            options.keyring_restore = 1;
        } else if (strcmp(argv[i], "keyring") == 0) {
            options.keyring = 1;
        } else if (strcmp(argv[i], "debug") == 0) {
            options.debug = 1;
        } else {
            pam_syslog(pamh, LOG_WARNING, "unknown option %s", argv[i]);
        }
    }
    return options;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/// A remote login: the application set PAM_RHOST, as sshd, telnetd and
/// login -h do for whoever connected. Nobody there can touch the reader.
/// Loopback counts as remote too: sshd reports 127.0.0.1 or ::1 for a
/// connection through a port forward, which may come from anywhere. The one
/// exception is this machine's own name, which sudo sets as PAM_RHOST when
/// its pam_rhost flag is on. The service also refuses callers that are not
/// at the reader (docs/SECURITY.md); this check answers at once, before the
/// bus.
static int is_remote(pam_handle_t *pamh) {
    const void *item = NULL;
    if (pam_get_item(pamh, PAM_RHOST, &item) != PAM_SUCCESS || item == NULL) return 0;
    const char *host = item;
    if (host[0] == '\0') return 0;
    char self[256] = { 0 };
    if (gethostname(self, sizeof self - 1) == 0 && self[0] != '\0' && strcmp(host, self) == 0) return 0;
    return 1;
}

/// What the person reads for each EvaluationStatus.
static const char *status_text(const char *status) {
    if (strcmp(status, "place-finger") == 0) return "Place your finger on the fingerprint reader";
    if (strcmp(status, "no-match") == 0) return "Not recognized, try again";
    if (strcmp(status, "retry-scan") == 0) return "Try again";
    if (strcmp(status, "swipe-too-short") == 0) return "Swipe was too short, try again";
    if (strcmp(status, "finger-not-centered") == 0) return "Center your finger on the reader, try again";
    if (strcmp(status, "remove-and-retry") == 0) return "Lift your finger and place it again";
    if (strcmp(status, "too-fast") == 0) return "Too fast, hold your finger on the reader a little longer";
    return NULL;
}

static DBusConnection *connect_system_bus(pam_handle_t *pamh) {
    DBusError error;
    dbus_error_init(&error);
    // Private: the module must not share (or close) a connection the
    // program itself may hold.
    DBusConnection *bus = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error);
    if (!bus) {
        pam_syslog(pamh, LOG_INFO, "no system bus: %s", error.message ? error.message : "?");
        dbus_error_free(&error);
        return NULL;
    }
    dbus_connection_set_exit_on_disconnect(bus, FALSE);
    return bus;
}

static void close_bus(DBusConnection *bus) {
    dbus_connection_close(bus);
    dbus_connection_unref(bus);
}

/// The unique name that owns the service now (starting it by activation if
/// needed), so that only its signals are believed. NULL if none.
static char *service_owner(DBusConnection *bus) {
    DBusError error;
    dbus_error_init(&error);
    dbus_uint32_t started = 0;
    if (!dbus_bus_start_service_by_name(bus, SERVICE, 0, &started, &error)) dbus_error_free(&error);
    DBusMessage *call = dbus_message_new_method_call("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                     "org.freedesktop.DBus", "GetNameOwner");
    if (!call) return NULL;
    const char *name = SERVICE;
    dbus_message_append_args(call, DBUS_TYPE_STRING, &name, DBUS_TYPE_INVALID);
    DBusMessage *reply = dbus_connection_send_with_reply_and_block(bus, call, 5000, &error);
    dbus_message_unref(call);
    if (!reply) {
        dbus_error_free(&error);
        return NULL;
    }
    const char *owner = NULL;
    char *copy = NULL;
    if (dbus_message_get_args(reply, &error, DBUS_TYPE_STRING, &owner, DBUS_TYPE_INVALID)) copy = strdup(owner);
    dbus_error_free(&error);
    dbus_message_unref(reply);
    return copy;
}

static void random_request_id(char *buffer, size_t size) {
    unsigned char bytes[12] = { 0 };
    FILE *urandom = fopen("/dev/urandom", "re");
    if (urandom) {
        if (fread(bytes, 1, sizeof bytes, urandom) != sizeof bytes) memset(bytes, 0, sizeof bytes);
        fclose(urandom);
    }
    int written = snprintf(buffer, size, "pam-");
    for (size_t i = 0; i < sizeof bytes && written + 2 < (int)size; i++) {
        written += snprintf(buffer + written, size - (size_t)written, "%02x", bytes[i]);
    }
}

/// Appends one `{key: <string>}` entry to an open a{sv}.
static int append_string_option(DBusMessageIter *dict, const char *key, const char *value) {
    DBusMessageIter entry, variant;
    return dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry) &&
           dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key) &&
           dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "s", &variant) &&
           dbus_message_iter_append_basic(&variant, DBUS_TYPE_STRING, &value) &&
           dbus_message_iter_close_container(&entry, &variant) &&
           dbus_message_iter_close_container(dict, &entry);
}

/// Appends `{"request-id": <id>, "login-secret-nonce": <nonce>, "pam-service": <service>}`
/// as the call's a{sv}: a match then leaves a ticket for one release of the
/// login secret by this process with this nonce (docs/KEYRING.md); the PAM
/// service (PAM_SERVICE: compiled into the program that runs PAM, "sudo",
/// "polkit-1", "gdm-password") decides, with the caller's proven program, the
/// context of the service's fingerprint policy (docs/POLICY.md) and goes into
/// its history of approvals (docs/HISTORY.md). A name over the service's
/// bound (64 bytes) is not sent.
static int append_options(DBusMessage *call, const char *request_id, const unsigned char nonce[LS_NONCE_BYTES],
                          const char *pam_service) {
    DBusMessageIter args, dict, entry, variant, array;
    const char *nonce_key = "login-secret-nonce";
    const unsigned char *bytes = nonce;
    int with_service = pam_service && pam_service[0] && strlen(pam_service) <= 64;
    dbus_message_iter_init_append(call, &args);
    return dbus_message_iter_open_container(&args, DBUS_TYPE_ARRAY, "{sv}", &dict) &&
           (!with_service || append_string_option(&dict, "pam-service", pam_service)) &&
           append_string_option(&dict, "request-id", request_id) &&
           dbus_message_iter_open_container(&dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry) &&
           dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &nonce_key) &&
           dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "ay", &variant) &&
           dbus_message_iter_open_container(&variant, DBUS_TYPE_ARRAY, "y", &array) &&
           dbus_message_iter_append_fixed_array(&array, DBUS_TYPE_BYTE, &bytes, LS_NONCE_BYTES) &&
           dbus_message_iter_close_container(&variant, &array) &&
           dbus_message_iter_close_container(&entry, &variant) &&
           dbus_message_iter_close_container(&dict, &entry) &&
           dbus_message_iter_close_container(&args, &dict);
}

static void send_cancel(DBusConnection *bus, const char *request_id) {
    DBusMessage *cancel = dbus_message_new_method_call(SERVICE, OBJECT, INTERFACE, "Cancel");
    if (!cancel) return;
    dbus_message_append_args(cancel, DBUS_TYPE_STRING, &request_id, DBUS_TYPE_INVALID);
    dbus_message_set_no_reply(cancel, TRUE);
    dbus_connection_send(bus, cancel, NULL);
    dbus_connection_flush(bus);
    dbus_message_unref(cancel);
}

typedef struct {
    pam_handle_t *pamh;
    const char *owner;
    const char *request_id;
} StatusContext;

/// EvaluationStatus of this request, from the service's owner only, shown
/// to the person through the conversation.
static DBusHandlerResult show_status(DBusConnection *bus, DBusMessage *message, void *data) {
    (void)bus;
    StatusContext *context = data;
    const char *sender = dbus_message_get_sender(message);
    const char *id = NULL, *status = NULL;
    if (dbus_message_is_signal(message, INTERFACE, "EvaluationStatus") && sender &&
        strcmp(sender, context->owner) == 0 &&
        dbus_message_get_args(message, NULL, DBUS_TYPE_STRING, &id, DBUS_TYPE_STRING, &status, DBUS_TYPE_INVALID) &&
        strcmp(id, context->request_id) == 0) {
        const char *text = status_text(status);
        if (text) pam_info(context->pamh, "%s", text);
        return DBUS_HANDLER_RESULT_HANDLED;
    }
    return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

/// The PAM answer for a D-Bus error of VerifyUser.
static int pam_result_for(const char *error_name) {
    if (strcmp(error_name, ERROR_PREFIX "AuthenticationFailed") == 0) return PAM_AUTH_ERR;
    if (strcmp(error_name, ERROR_PREFIX "PermissionDenied") == 0) return PAM_AUTHINFO_UNAVAIL;
    // BiometryNotAvailable, BiometryNotEnrolled, BiometryLockout, SystemCancel,
    // UserCancel, NotInteractive, LimitExceeded, no service, timeouts: the
    // finger cannot be used now; the password can.
    return PAM_AUTHINFO_UNAVAIL;
}

/// The PAM service this transaction runs (PAM_SERVICE), or NULL.
static const char *pam_service(pam_handle_t *pamh) {
    const void *item = NULL;
    if (pam_get_item(pamh, PAM_SERVICE, &item) != PAM_SUCCESS) return NULL;
    return item;
}

static int verify(pam_handle_t *pamh, const char *user, const Options *options) {
    DBusConnection *bus = connect_system_bus(pamh);
    if (!bus) return PAM_AUTHINFO_UNAVAIL;
    int result = PAM_AUTHINFO_UNAVAIL;
    char *owner = service_owner(bus);
    if (!owner) {
        pam_syslog(pamh, LOG_INFO, "%s is not available", SERVICE);
        close_bus(bus);
        return PAM_AUTHINFO_UNAVAIL;
    }
    char request_id[64];
    random_request_id(request_id, sizeof request_id);
    unsigned char nonce[LS_NONCE_BYTES];
    if (!ls_make_nonce(nonce)) {
        free(owner);
        close_bus(bus);
        return PAM_AUTHINFO_UNAVAIL;
    }

    // Status signals: only from the service's owner, only for this request.
    char rule[512];
    snprintf(rule, sizeof rule,
             "type='signal',sender='%s',interface='" INTERFACE "',member='EvaluationStatus',arg0='%s'",
             owner, request_id);
    dbus_bus_add_match(bus, rule, NULL);

    DBusMessage *call = dbus_message_new_method_call(SERVICE, OBJECT, INTERFACE, "VerifyUser");
    DBusPendingCall *pending = NULL;
    if (!call || !dbus_message_append_args(call, DBUS_TYPE_STRING, &user, DBUS_TYPE_INVALID) ||
        !append_options(call, request_id, nonce, pam_service(pamh)) ||
        !dbus_connection_send_with_reply(bus, call, &pending, (options->timeout + 10) * 1000) || !pending) {
        if (call) dbus_message_unref(call);
        free(owner);
        close_bus(bus);
        return PAM_AUTHINFO_UNAVAIL;
    }
    dbus_message_unref(call);

    // Dispatching (not popping) the incoming messages: libdbus completes a
    // pending call only when its reply is dispatched. The filter shows the
    // status signals.
    StatusContext context = { pamh, owner, request_id };
    dbus_connection_add_filter(bus, show_status, &context, NULL);
    double deadline = now_seconds() + options->timeout;
    int timed_out = 0;
    while (!dbus_pending_call_get_completed(pending)) {
        if (now_seconds() >= deadline) {
            timed_out = 1;
            break;
        }
        if (!dbus_connection_read_write_dispatch(bus, 100)) break;   /* disconnected */
    }
    dbus_connection_remove_filter(bus, show_status, &context);
    if (timed_out) {
        send_cancel(bus, request_id);
        dbus_pending_call_cancel(pending);
        pam_info(pamh, "No fingerprint; use your password");
        result = PAM_AUTHINFO_UNAVAIL;
    } else if (dbus_pending_call_get_completed(pending)) {
        DBusMessage *reply = dbus_pending_call_steal_reply(pending);
        if (reply && dbus_message_get_type(reply) == DBUS_MESSAGE_TYPE_METHOD_RETURN) {
            result = PAM_SUCCESS;
            ls_remember_match(pamh, user, nonce);
        } else if (reply) {
            const char *name = dbus_message_get_error_name(reply);
            result = name ? pam_result_for(name) : PAM_AUTHINFO_UNAVAIL;
            if (options->debug || result == PAM_AUTH_ERR) {
                const char *text = NULL;
                dbus_message_get_args(reply, NULL, DBUS_TYPE_STRING, &text, DBUS_TYPE_INVALID);
                pam_syslog(pamh, result == PAM_AUTH_ERR ? LOG_NOTICE : LOG_INFO, "fingerprint of %s: %s (%s)",
                           user, name ? name : "?", text ? text : "");
            }
            if (result == PAM_AUTH_ERR) pam_info(pamh, "Fingerprint not recognized");
        }
        if (reply) dbus_message_unref(reply);
    }
    dbus_pending_call_unref(pending);
    dbus_bus_remove_match(bus, rule, NULL);
    free(owner);
    close_bus(bus);
    return result;
}

/// Whether pam_unix verified PAM_USER's password in this transaction: its
/// pam_sm_authenticate records its result as the PAM data
/// "unix_setcred_return" (for its own setcred), PAM_SUCCESS only for the
/// right password. PAM_AUTHTOK cannot tell: it holds whatever was typed,
/// right or wrong, and libpam clears it when pam_authenticate returns.
static int password_verified(pam_handle_t *pamh) {
    const void *data = NULL;
    return pam_get_data(pamh, "unix_setcred_return", &data) == PAM_SUCCESS && data != NULL &&
           *(const int *)data == PAM_SUCCESS;
}

/// The PAM data under which the authenticate pass records whose password
/// this transaction is about (a copy of PAM_USER then).
#define AUTHENTICATED_USER_DATA "pam_localauth_authenticated_user"

static void free_data(pam_handle_t *pamh, void *data, int error_status) {
    (void)pamh;
    (void)error_status;
    free(data);
}

/// The user the authenticate pass saw, or NULL if it did not run.
static const char *authenticated_user(pam_handle_t *pamh) {
    const void *data = NULL;
    if (pam_get_data(pamh, AUTHENTICATED_USER_DATA, &data) != PAM_SUCCESS || data == NULL) return NULL;
    return data;
}

static void reset_lockout(pam_handle_t *pamh, const char *user, const Options *options) {
    if (!password_verified(pamh)) {
        if (options->debug) pam_syslog(pamh, LOG_DEBUG, "no verified password in this transaction; lockout kept");
        return;
    }
    if (geteuid() != 0) {
        if (options->debug) pam_syslog(pamh, LOG_DEBUG, "not a root PAM host; lockout of %s kept", user);
        return;
    }
    DBusConnection *bus = connect_system_bus(pamh);
    if (!bus) return;
    DBusMessage *call = dbus_message_new_method_call(SERVICE, OBJECT, INTERFACE, "ResetLockout");
    if (call && dbus_message_append_args(call, DBUS_TYPE_STRING, &user, DBUS_TYPE_INVALID)) {
        DBusError error;
        dbus_error_init(&error);
        DBusMessage *reply = dbus_connection_send_with_reply_and_block(bus, call, 5000, &error);
        if (reply) {
            dbus_message_unref(reply);
        } else if (options->debug) {
            pam_syslog(pamh, LOG_DEBUG, "lockout of %s not reset: %s", user, error.message ? error.message : "?");
        }
        dbus_error_free(&error);
    }
    if (call) dbus_message_unref(call);
    close_bus(bus);
}

/// PAM_USER, if it can be sent: a name libdbus would abort on (not UTF-8)
/// is no account the service knows. NULL: the module answers PAM_USER_UNKNOWN.
static const char *sendable_user(pam_handle_t *pamh) {
    const char *user = NULL;
    if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || user == NULL || user[0] == '\0') return NULL;
    if (!dbus_validate_utf8(user, NULL)) {
        pam_syslog(pamh, LOG_NOTICE, "the user name is not valid UTF-8; no such account");
        return NULL;
    }
    return user;
}

static int authenticate(pam_handle_t *pamh, const char *user, const Options *options) {
    if (is_remote(pamh)) {
        if (options->debug) pam_syslog(pamh, LOG_DEBUG, "remote login: no fingerprint");
        return PAM_AUTHINFO_UNAVAIL;
    }
    return verify(pamh, user, options);
}

EXPORTED PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)flags;
    Options options = parse_options(pamh, argc, argv);
    // The fingerprint line starts every pass that can match: a match an
    // earlier pass of this handle saw is forgotten before anything else
    // (login_secret.c), so the keyring line never presents its spent nonce.
    if (!options.reset_lockout && !options.keyring_authtok && !options.keyring_restore && !options.keyring) ls_forget_match(pamh);
    const char *user = sendable_user(pamh);
    if (user == NULL) return PAM_USER_UNKNOWN;
    // reset-lockout acts in pam_sm_setcred, after the stack succeeded, for
    // the user this pass authenticates (pam_unix checks PAM_USER in the same
    // pass, before or after this line). PAM_USER may be another one by then.
    if (options.reset_lockout) {
        char *copy = strdup(user);
        if (copy && pam_set_data(pamh, AUTHENTICATED_USER_DATA, copy, free_data) != PAM_SUCCESS) free(copy);
        return PAM_IGNORE;
    }
    // The login keyring's lines (login_secret.c): the password is the one
    // pam_unix verified in this pass, for PAM_USER as it is in this pass.
    if (options.keyring_authtok) return ls_keyring_authtok(pamh, user, password_verified(pamh), options.debug);
    if (options.keyring_restore) return ls_keyring_restore(pamh);
    if (options.keyring) return PAM_IGNORE;
    // With debug, one line per call: its result and the time from this
    // function's start to its return (the system test reads it).
    double start = now_seconds();
    int result = authenticate(pamh, user, &options);
    if (options.debug)
        pam_syslog(pamh, LOG_DEBUG, "authenticate %s: %s after %.1f ms", user, pam_strerror(pamh, result),
                   (now_seconds() - start) * 1000.0);
    return result;
}

/// setcred runs after pam_authenticate succeeded (PAM's contract with the
/// application), for the modules the authenticate pass reached: here a
/// password in the transaction is one the stack accepted.
EXPORTED PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    Options options = parse_options(pamh, argc, argv);
    if (!options.reset_lockout) return PAM_SUCCESS;
    if (flags & PAM_DELETE_CRED) return PAM_IGNORE;
    const char *user = authenticated_user(pamh);
    if (user == NULL) {
        if (options.debug) pam_syslog(pamh, LOG_DEBUG, "no authenticate pass in this transaction; lockout kept");
        return PAM_IGNORE;
    }
    const void *now = NULL;
    if (options.debug && pam_get_item(pamh, PAM_USER, &now) == PAM_SUCCESS && now != NULL && strcmp(now, user) != 0) {
        pam_syslog(pamh, LOG_DEBUG, "PAM_USER is %s now; only %s's password was verified", (const char *)now, user);
    }
    reset_lockout(pamh, user, &options);
    return PAM_IGNORE;
}

/// passwd: with `keyring`, the login secret's password wrap follows the new
/// password (login_secret.c). Always PAM_IGNORE.
EXPORTED PAM_EXTERN int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    Options options = parse_options(pamh, argc, argv);
    if (!options.keyring) return PAM_IGNORE;
    const char *user = sendable_user(pamh);
    if (user == NULL) return PAM_IGNORE;
    return ls_keyring_chauthtok(pamh, flags, user, options.debug);
}
