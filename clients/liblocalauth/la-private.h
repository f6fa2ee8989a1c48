/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the library's parts share and apps do not see: the one proxy of the
 * process, the error mapping, the app id. */
#pragma once

#include "localauth.h"
#include "la-dbus-generated.h"

G_BEGIN_DECLS

/* The contract's fixed names (dbus/org.example.LocalAuth.xml). */
#define LA_BUS_NAME "org.example.LocalAuth"
#define LA_OBJECT_PATH "/org/example/LocalAuth"
#define LA_INTERFACE "org.example.LocalAuth"
#define LA_ERROR_PREFIX "org.example.LocalAuth.Error."

/* EvaluatePolicy and AuthorizeRight take as long as the person takes (the
 * service bounds them by its scan timeout); rights calls may wait for a
 * polkit dialog. No reply timeout on those. */
#define LA_NO_TIMEOUT G_MAXINT

LaDBusLocalAuth *la_client_get_proxy (GError **error);
void la_client_map_error (GError **error);
GError *la_client_new_error (LaError code, const gchar *dbus_name, const gchar *message);
const gchar *la_client_app_id (void);
GVariant *la_client_rights_options (void);

/* A call to the service's interface on the shared proxy; the reply or NULL
 * with an LA_ERROR. */
GVariant *la_client_call_sync (const gchar *method, GVariant *parameters, GError **error);
void la_client_call (const gchar *method, GVariant *parameters, gint timeout_msec, GTask *task);
/* For la_client_call's task: the reply (or a mapped error). */
GVariant *la_client_call_finish (GAsyncResult *result, GError **error);

/* Connects a handler to the service's signal `member`, called only when the
 * real owner of the service's name sent it. */
gulong la_client_connect_signal (LaDBusLocalAuth *proxy, const gchar *member,
                                 void (*handler) (GVariant *parameters, gpointer user_data),
                                 gpointer user_data);

/* Between LaRight and its LaSecret / LaPrivateKey. */
LaPrivateKey *la_private_key_new_for_right (LaRight *right);
const gchar *la_right_get_handle (LaRight *right);
/* After an error of a call with the handle: NotAuthorized and
 * RightInvalidated end the authorization. */
void la_right_forget_authorization_after (LaRight *right, const GError *error);
/* ListRights's answer, one right at a time (LaRightStore, LaQuickUnlock):
 * the next entry of @entries (an iterator over the reply's `aa{sv}`, from
 * la_right_list_entries()) as a dictionary the caller unrefs, and its
 * identifier in @identifier (NULL if absent; owned by the dictionary).
 * NULL after the last. */
GVariantIter *la_right_list_entries (GVariant *reply);
GVariantDict *la_right_list_next (GVariantIter *entries, const gchar **identifier);

G_END_DECLS
