#include "CKeyringShim.h"

#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
#include <stdlib.h>
#include <string.h>

#define LOGIN_COLLECTION "/org/freedesktop/secrets/collection/login"

static int fail(char **error, const char *what, GError *cause) {
    *error = g_strdup_printf("%s%s%s", what, cause ? ": " : "", cause ? cause->message : "");
    if (cause) g_error_free(cause);
    return -1;
}

int la_keyring_change_login_password(const char *original, size_t original_length, const char *master, size_t master_length,
                                     char **error) {
    GError *cause = NULL;
    SecretService *service = secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, NULL, &cause);
    if (!service) return fail(error, "no Secret Service on the session bus", cause);
    const char *algorithm = secret_service_get_session_algorithms(service);
    if (!algorithm || strcmp(algorithm, "plain") == 0) {
        g_object_unref(service);
        return fail(error, "the Secret Service offers no encrypted session; the secrets would cross the bus in clear", NULL);
    }
    SecretValue *old_value = secret_value_new(original, (gssize)original_length, "text/plain");
    SecretValue *new_value = secret_value_new(master, (gssize)master_length, "text/plain");
    GVariant *old_secret = secret_service_encode_dbus_secret(service, old_value);
    GVariant *new_secret = secret_service_encode_dbus_secret(service, new_value);
    secret_value_unref(old_value);
    secret_value_unref(new_value);
    int result = 0;
    if (!old_secret || !new_secret) {
        result = fail(error, "libsecret could not encode the secrets for its session", NULL);
        if (old_secret) g_variant_unref(old_secret);
        if (new_secret) g_variant_unref(new_secret);
    } else {
        GVariant *reply = g_dbus_proxy_call_sync(G_DBUS_PROXY(service),
                                                 "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.ChangeWithMasterPassword",
                                                 g_variant_new("(o@(oayays)@(oayays))", LOGIN_COLLECTION, old_secret, new_secret),
                                                 G_DBUS_CALL_FLAGS_NONE, 30000, NULL, &cause);
        if (reply) {
            g_variant_unref(reply);
        } else {
            result = fail(error, "gnome-keyring refused the change", cause);
        }
    }
    g_object_unref(service);
    return result;
}
