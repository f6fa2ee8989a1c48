// CGtk: GTK 4 (and the GLib, GDK, graphene and cairo it brings) for Swift,
// used only by localauth-prompt. Nothing of it reaches a public API.
// Why this header exists: a systemLibrary module needs one; GTK's own
// headers are imported as they are. Macros and variadic functions that Swift
// cannot call are wrapped in CGtkShims instead.
#ifndef CGTK_SHIM_H
#define CGTK_SHIM_H
#include <gtk/gtk.h>
#endif
