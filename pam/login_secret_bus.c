// The login secret's D-Bus calls in the PAM host (login_secret.c,
// login_secret_passwd.c): a private system bus connection, building the
// a{sv} options and reading the answers' entries. libdbus, no main loop: one
// blocking call at a time.
#include "login_secret.h"

#include <security/pam_ext.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#define SERVICE "org.example.LocalAuth"
#define OBJECT "/org/example/LocalAuth"
#define INTERFACE "org.example.LocalAuth"
#define ERROR_PREFIX "org.example.LocalAuth.Error."
#define CALL_TIMEOUT_MS 10000

DBusConnection *ls_bus_open(pam_handle_t *pamh) {
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

void ls_bus_close(DBusConnection *bus) {
    dbus_connection_close(bus);
    dbus_connection_unref(bus);
}

DBusMessage *ls_send_call(DBusConnection *bus, DBusMessage *call, char *error_name, size_t size) {
    DBusError error;
    dbus_error_init(&error);
    DBusMessage *reply = dbus_connection_send_with_reply_and_block(bus, call, CALL_TIMEOUT_MS, &error);
    dbus_message_unref(call);
    if (!reply) snprintf(error_name, size, "%s", error.name ? error.name : "?");
    dbus_error_free(&error);
    return reply;
}

int ls_append_bytes(DBusMessageIter *iter, const unsigned char *bytes, int count) {
    DBusMessageIter array;
    return dbus_message_iter_open_container(iter, DBUS_TYPE_ARRAY, "y", &array) &&
           dbus_message_iter_append_fixed_array(&array, DBUS_TYPE_BYTE, &bytes, count) &&
           dbus_message_iter_close_container(iter, &array);
}

int ls_entry_bytes(DBusMessageIter *dict, const char *key, const unsigned char *bytes, int count) {
    DBusMessageIter entry, variant;
    return dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry) &&
           dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key) &&
           dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "ay", &variant) && ls_append_bytes(&variant, bytes, count) &&
           dbus_message_iter_close_container(&entry, &variant) && dbus_message_iter_close_container(dict, &entry);
}

static int entry_basic(DBusMessageIter *dict, const char *key, int type, const char *signature, const void *value) {
    DBusMessageIter entry, variant;
    return dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry) &&
           dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key) &&
           dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, signature, &variant) &&
           dbus_message_iter_append_basic(&variant, type, value) && dbus_message_iter_close_container(&entry, &variant) &&
           dbus_message_iter_close_container(dict, &entry);
}

int ls_entry_u32(DBusMessageIter *dict, const char *key, dbus_uint32_t value) {
    return entry_basic(dict, key, DBUS_TYPE_UINT32, "u", &value);
}

int ls_entry_bool(DBusMessageIter *dict, const char *key, int value) {
    dbus_bool_t flag = value ? TRUE : FALSE;
    return entry_basic(dict, key, DBUS_TYPE_BOOLEAN, "b", &flag);
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

int ls_entry_get_bytes(DBusMessage *reply, const char *key, const unsigned char **bytes, int *count) {
    DBusMessageIter value, array;
    if (!find_entry(reply, key, &value) || dbus_message_iter_get_arg_type(&value) != DBUS_TYPE_ARRAY ||
        dbus_message_iter_get_element_type(&value) != DBUS_TYPE_BYTE) return 0;
    dbus_message_iter_recurse(&value, &array);
    dbus_message_iter_get_fixed_array(&array, bytes, count);
    return 1;
}

int ls_entry_get_u32(DBusMessage *reply, const char *key, dbus_uint32_t *number) {
    DBusMessageIter value;
    if (!find_entry(reply, key, &value) || dbus_message_iter_get_arg_type(&value) != DBUS_TYPE_UINT32) return 0;
    dbus_message_iter_get_basic(&value, number);
    return 1;
}

int ls_entry_get_bool(DBusMessage *reply, const char *key) {
    DBusMessageIter value;
    dbus_bool_t flag = FALSE;
    if (!find_entry(reply, key, &value) || dbus_message_iter_get_arg_type(&value) != DBUS_TYPE_BOOLEAN) return 0;
    dbus_message_iter_get_basic(&value, &flag);
    return flag ? 1 : 0;
}

DBusMessage *ls_new_call(const char *method, const char *user) {
    DBusMessage *call = dbus_message_new_method_call(SERVICE, OBJECT, INTERFACE, method);
    if (call && !dbus_message_append_args(call, DBUS_TYPE_STRING, &user, DBUS_TYPE_INVALID)) {
        dbus_message_unref(call);
        return NULL;
    }
    return call;
}

int ls_is_error(const char *name, const char *suffix) {
    return strncmp(name, ERROR_PREFIX, strlen(ERROR_PREFIX)) == 0 && strcmp(name + strlen(ERROR_PREFIX), suffix) == 0;
}

DBusMessage *ls_password_wrap(pam_handle_t *pamh, DBusConnection *bus, const char *user) {
    DBusMessage *call = ls_new_call("GetLoginSecretPasswordWrap", user);
    DBusMessageIter args, dict;
    if (!call) return NULL;
    dbus_message_iter_init_append(call, &args);
    if (!dbus_message_iter_open_container(&args, DBUS_TYPE_ARRAY, "{sv}", &dict) || !dbus_message_iter_close_container(&args, &dict)) {
        dbus_message_unref(call);
        return NULL;
    }
    char error_name[256] = "";
    DBusMessage *reply = ls_send_call(bus, call, error_name, sizeof error_name);
    if (!reply && !ls_is_error(error_name, "NoSecret")) pam_syslog(pamh, LOG_INFO, "keyring: no password wrap for %s: %s", user, error_name);
    return reply;
}
