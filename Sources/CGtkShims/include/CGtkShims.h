// CGtkShims: the few GTK calls Swift cannot make itself, for localauth-prompt.
//
// Every parameter is `void *` (a GObject of the type named in the comment):
// GTK's headers belong to the CGtk module, and including them here too
// would give Swift two different copies of every GTK type.
#ifndef CGTKSHIMS_H
#define CGTKSHIMS_H

/// g_signal_connect is a macro, and its handler is a GCallback that Swift
/// cannot make from a closure with the signal's real signature. Connects
/// `signal` of `instance` (a GObject) swapped, so that `callback` gets only
/// `data` (the signal's own arguments are ignored; only for signals whose
/// handler returns void, such as GtkButton::clicked). `destroy(data)` runs
/// when the handler is disconnected or the object finalized.
unsigned long cgtkshims_connect(void *instance, const char *signal, void (*callback)(void *data), void *data,
                                void (*destroy)(void *data));

/// GtkWindow::close-request returns a gboolean, so cgtkshims_connect cannot
/// serve it: `callback(data)` runs and the window stays open (TRUE), for the
/// program to close it once it has answered. `window`: a GtkWindow.
void cgtkshims_on_close_request(void *window, void (*callback)(void *data), void *data);

/// GtkEventControllerKey::key-pressed has a (controller, keyval, keycode,
/// state) signature returning gboolean: a key controller in the capture phase
/// on `widget` (a GtkWidget) calls `callback(data, keyval)`; a nonzero result
/// means the key was handled.
void cgtkshims_on_key_pressed(void *widget, int (*callback)(void *data, unsigned int keyval), void *data);

/// gtk_accessible_update_property is variadic: sets the accessible label
/// (GTK_ACCESSIBLE_PROPERTY_LABEL) of `accessible` (a GtkAccessible).
void cgtkshims_accessible_set_label(void *accessible, const char *label);

/// The same for GTK_ACCESSIBLE_PROPERTY_DESCRIPTION.
void cgtkshims_accessible_set_description(void *accessible, const char *description);

/// gtk_accessible_update_relation is variadic: `accessible` is labelled by
/// the widget `label` (GTK_ACCESSIBLE_RELATION_LABELLED_BY).
void cgtkshims_accessible_labelled_by(void *accessible, void *label);

/// The same for GTK_ACCESSIBLE_RELATION_DESCRIBED_BY.
void cgtkshims_accessible_described_by(void *accessible, void *description);

/// g_object_set is variadic: sets GtkSettings' gtk-application-prefer-dark-theme
/// on the default display's settings.
void cgtkshims_prefer_dark_theme(int dark);

/// The color a widget's text is drawn in, for drawing in its style: into
/// `rgba` (a GdkRGBA). GTK 4.10 has gtk_widget_get_color and deprecates the
/// style context's; Debian 12's GTK (4.8) has only the latter.
void cgtkshims_widget_color(void *widget, void *rgba);

/// Loads the NUL-terminated style sheet `css` into `provider` (a
/// GtkCssProvider): gtk_css_provider_load_from_string from GTK 4.12, which
/// deprecates load_from_data, the only one GTK 4.8 (Debian 12) has.
void cgtkshims_css_provider_load(void *provider, const char *css);

#endif
