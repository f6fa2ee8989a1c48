// CGLib: GLib, GObject and GIO for Swift.
// Why this header exists: G_SOURCE_REMOVE/CONTINUE, TRUE/FALSE and
// G_IO_ERROR are macros Swift cannot import; g_object_unref on a typed pointer
// needs a cast. Small static inline helpers stand in for them.
#ifndef CGLIB_SHIM_H
#define CGLIB_SHIM_H
#include <glib.h>
#include <glib-unix.h>
#include <glib-object.h>
#include <gio/gio.h>

static inline gboolean cglib_source_remove(void) { return G_SOURCE_REMOVE; }
static inline gboolean cglib_true(void) { return TRUE; }
static inline GQuark cglib_io_error_quark(void) { return G_IO_ERROR; }
static inline void cglib_object_unref(void *object) { if (object) g_object_unref(object); }
static inline void *cglib_object_ref(void *object) { return g_object_ref(object); }
#endif
