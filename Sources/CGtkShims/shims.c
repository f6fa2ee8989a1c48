#include "CGtkShims.h"
#include <gtk/gtk.h>

unsigned long cgtkshims_connect(void *instance, const char *signal, void (*callback)(void *data), void *data,
                                void (*destroy)(void *data)) {
    return g_signal_connect_data(instance, signal, G_CALLBACK(callback), data, (GClosureNotify)destroy,
                                 G_CONNECT_SWAPPED);
}

struct callback_box {
    void (*callback)(void *data);
    void *data;
};

static gboolean on_close_request(GtkWindow *window, gpointer user_data) {
    (void)window;
    struct callback_box *box = user_data;
    box->callback(box->data);
    return TRUE;
}

static void free_box(gpointer data, GClosure *closure) {
    (void)closure;
    g_free(data);
}

void cgtkshims_on_close_request(void *window, void (*callback)(void *data), void *data) {
    struct callback_box *box = g_new0(struct callback_box, 1);
    box->callback = callback;
    box->data = data;
    g_signal_connect_data(window, "close-request", G_CALLBACK(on_close_request), box, free_box, 0);
}

struct key_box {
    int (*callback)(void *data, unsigned int keyval);
    void *data;
};

static gboolean on_key_pressed(GtkEventControllerKey *controller, guint keyval, guint keycode,
                               GdkModifierType state, gpointer user_data) {
    (void)controller; (void)keycode; (void)state;
    struct key_box *box = user_data;
    return box->callback(box->data, keyval) != 0;
}

void cgtkshims_on_key_pressed(void *widget, int (*callback)(void *data, unsigned int keyval), void *data) {
    struct key_box *box = g_new0(struct key_box, 1);
    box->callback = callback;
    box->data = data;
    GtkEventController *controller = gtk_event_controller_key_new();
    gtk_event_controller_set_propagation_phase(controller, GTK_PHASE_CAPTURE);
    g_signal_connect_data(controller, "key-pressed", G_CALLBACK(on_key_pressed), box, free_box, 0);
    gtk_widget_add_controller(GTK_WIDGET(widget), controller);
}

void cgtkshims_accessible_set_label(void *accessible, const char *label) {
    gtk_accessible_update_property(GTK_ACCESSIBLE(accessible), GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
}

void cgtkshims_accessible_set_description(void *accessible, const char *description) {
    gtk_accessible_update_property(GTK_ACCESSIBLE(accessible), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION, description, -1);
}

void cgtkshims_accessible_labelled_by(void *accessible, void *label) {
    gtk_accessible_update_relation(GTK_ACCESSIBLE(accessible), GTK_ACCESSIBLE_RELATION_LABELLED_BY, label, NULL, -1);
}

void cgtkshims_accessible_described_by(void *accessible, void *description) {
    gtk_accessible_update_relation(GTK_ACCESSIBLE(accessible), GTK_ACCESSIBLE_RELATION_DESCRIBED_BY, description,
                                   NULL, -1);
}

void cgtkshims_prefer_dark_theme(int dark) {
    GtkSettings *settings = gtk_settings_get_default();
    if (settings) g_object_set(settings, "gtk-application-prefer-dark-theme", dark ? TRUE : FALSE, NULL);
}

void cgtkshims_widget_color(void *widget, void *rgba) {
#if GTK_CHECK_VERSION(4, 10, 0)
    gtk_widget_get_color(widget, rgba);
#else
    gtk_style_context_get_color(gtk_widget_get_style_context(widget), rgba);
#endif
}

void cgtkshims_css_provider_load(void *provider, const char *css) {
#if GTK_CHECK_VERSION(4, 12, 0)
    gtk_css_provider_load_from_string(provider, css);
#else
    gtk_css_provider_load_from_data(provider, css, -1);
#endif
}
