// CDBus: libdbus-1 for Swift.
// Why this header exists: libdbus's type codes and constants are macros with
// casts (e.g. `((int) 's')`), which Swift does not import. The few we need are
// re-exported here as constants; everything else comes straight from <dbus/dbus.h>.
#ifndef CDBUS_SHIM_H
#define CDBUS_SHIM_H
#include <dbus/dbus.h>

static const int CDBUS_TIMEOUT_INFINITE = DBUS_TIMEOUT_INFINITE;
static const int CDBUS_TIMEOUT_USE_DEFAULT = DBUS_TIMEOUT_USE_DEFAULT;
static const unsigned int CDBUS_NAME_FLAG_DO_NOT_QUEUE = DBUS_NAME_FLAG_DO_NOT_QUEUE;
static const int CDBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER = DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER;
static const int CDBUS_REQUEST_NAME_REPLY_ALREADY_OWNER = DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER;
static const int CDBUS_MAXIMUM_NAME_LENGTH = DBUS_MAXIMUM_NAME_LENGTH;

static inline dbus_bool_t cdbus_bool(int value) { return value ? TRUE : FALSE; }

/* Why: the service bounds what a caller can make it decode (docs/SECURITY.md)
 * and needs the byte length of an array argument without walking it.
 * dbus_message_iter_get_array_len is the only O(1) way; libdbus marks it
 * deprecated, so the warning is silenced here, once. It measures the array
 * a reader is *inside*: called on the iterator that points at the array it
 * answers 0 (which let a 1 MiB value through the 16 KiB limit; reliability
 * suite, R1), so this recurses first. `iter` points at an array. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static inline int cdbus_iter_array_byte_length(DBusMessageIter *iter) {
    DBusMessageIter inside;
    dbus_message_iter_recurse(iter, &inside);
    return dbus_message_iter_get_array_len(&inside);
}
#pragma GCC diagnostic pop
#endif
