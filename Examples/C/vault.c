/* A right's secret from C, over D-Bus only (docs/RIGHTS.md), with GDBus.
 *
 *   vault store ID SECRET   keep SECRET as right ID (a fingerprint releases it)
 *   vault load ID           after the fingerprint, print the secret
 *
 * cc -o vault vault.c $(pkg-config --cflags --libs gio-2.0)
 * The handle AuthorizeRight gives works only on the connection that asked. */
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>

#define APP_ID "org.example.CVault"

static GVariant *options(const char *secret) {
    GVariantBuilder builder;
    g_variant_builder_init(&builder, G_VARIANT_TYPE("a{sv}"));
    g_variant_builder_add(&builder, "{sv}", "app-id", g_variant_new_string(APP_ID));
    if (secret)
        g_variant_builder_add(&builder, "{sv}", "secret",
                              g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, secret, strlen(secret), 1));
    return g_variant_builder_end(&builder);
}

static GVariant *call(GDBusConnection *bus, const char *method, GVariant *arguments, const char *reply, GError **error) {
    return g_dbus_connection_call_sync(bus, "org.example.LocalAuth", "/org/example/LocalAuth", "org.example.LocalAuth",
                                       method, arguments, G_VARIANT_TYPE(reply), G_DBUS_CALL_FLAGS_NONE,
                                       G_MAXINT /* the person takes their time */, NULL, error);
}

int main(int argc, char **argv) {
    GError *error = NULL;
    GDBusConnection *bus = g_bus_get_sync(G_BUS_TYPE_SYSTEM, NULL, &error);
    GVariant *reply = NULL;
    if (!bus) goto failed;
    if (argc == 4 && strcmp(argv[1], "store") == 0) {
        reply = call(bus, "SaveRight", g_variant_new("(ss@a{sv})", argv[2], "biometry", options(argv[3])), "(ay)", &error);
        if (!reply) goto failed;
    } else if (argc == 3 && strcmp(argv[1], "load") == 0) {
        reply = call(bus, "AuthorizeRight", g_variant_new("(ss@a{sv})", argv[2], "Open the C vault", options(NULL)), "(s)", &error);
        if (!reply) goto failed;
        gchar *handle = NULL;
        g_variant_get(reply, "(s)", &handle);
        g_variant_unref(reply);
        reply = call(bus, "LoadSecret", g_variant_new("(s)", handle), "(ay)", &error);
        GVariant *done = call(bus, "Deauthorize", g_variant_new("(s)", handle), "()", NULL);
        if (done) g_variant_unref(done);
        g_free(handle);
        if (!reply) goto failed;
        gsize length = 0;
        GVariant *bytes = g_variant_get_child_value(reply, 0);
        const char *secret = g_variant_get_fixed_array(bytes, &length, 1);
        printf("%.*s\n", (int)length, secret);
        g_variant_unref(bytes);
    } else {
        fprintf(stderr, "usage: vault store ID SECRET | vault load ID\n");
        return 2;
    }
    g_variant_unref(reply);
    g_object_unref(bus);
    return 0;
failed:
    fprintf(stderr, "%s\n", error ? error->message : "failed");
    return 1;
}
