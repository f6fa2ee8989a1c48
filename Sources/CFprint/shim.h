// CFprint: libfprint-2 for Swift.
// Why this header exists: FP_DEVICE_ERROR / FP_DEVICE_RETRY are macros, and
// GPtrArray element access is a macro; helpers below stand in for them.
#ifndef CFPRINT_SHIM_H
#define CFPRINT_SHIM_H
#include <fprint.h>

static inline GQuark cfprint_device_error_quark(void) { return FP_DEVICE_ERROR; }
static inline GQuark cfprint_device_retry_quark(void) { return FP_DEVICE_RETRY; }
static inline void *cfprint_ptr_array_index(GPtrArray *array, guint index) { return g_ptr_array_index(array, index); }

// g_signal_connect is a macro, and GCallback erases the handler's type: these
// helpers connect typed handlers to the signals the service follows
// (hotplug: FpContext::device-added / ::device-removed, FpDevice::removed).
typedef void (*cfprint_context_device_cb)(FpContext *context, FpDevice *device, gpointer data);
typedef void (*cfprint_device_cb)(FpDevice *device, gpointer data);
static inline gulong cfprint_connect_context_device(FpContext *context, const char *signal,
                                                    cfprint_context_device_cb handler, gpointer data) {
    return g_signal_connect(context, signal, G_CALLBACK(handler), data);
}
static inline gulong cfprint_connect_device(FpDevice *device, const char *signal,
                                            cfprint_device_cb handler, gpointer data) {
    return g_signal_connect(device, signal, G_CALLBACK(handler), data);
}
// A property's notify::NAME signal (the fprintd interface follows finger-status).
typedef void (*cfprint_notify_cb)(FpDevice *device, GParamSpec *spec, gpointer data);
static inline gulong cfprint_connect_notify(FpDevice *device, const char *signal,
                                            cfprint_notify_cb handler, gpointer data) {
    return g_signal_connect(device, signal, G_CALLBACK(handler), data);
}

// The same, with `destroy` called on `data` when the handler goes (with the
// device): what the handler holds is freed with the reader it follows.
static inline gulong cfprint_connect_notify_full(FpDevice *device, const char *signal, cfprint_notify_cb handler,
                                                 gpointer data, GClosureNotify destroy) {
    return g_signal_connect_data(device, signal, G_CALLBACK(handler), data, destroy, 0);
}

// The USB port a reader hangs on, as gusb names it ("usb:BB:PP:PP…", hex bus
// and port numbers), or NULL for a reader without one (libfprint's virtual
// devices, SPI readers). Read through libfprint's construct-only
// "fpi-usb-device" property, since libfprint has no public getter; g_free it.
static inline char *cfprint_usb_platform_id(FpDevice *device) {
    if (!g_object_class_find_property(G_OBJECT_GET_CLASS(device), "fpi-usb-device")) return NULL;
    GObject *usb = NULL;
    g_object_get(device, "fpi-usb-device", &usb, NULL);
    if (!usb) return NULL;
    char *id = NULL;
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(usb), "platform-id")) g_object_get(usb, "platform-id", &id, NULL);
    g_object_unref(usb);
    return id;
}
#endif
