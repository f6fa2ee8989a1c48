/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#if !defined(LOCALAUTH_INSIDE) && !defined(LOCALAUTH_COMPILATION)
#error "Only <localauth.h> can be included directly."
#endif

#include <gio/gio.h>
#include "la-error.h"

G_BEGIN_DECLS

/**
 * LA_QUICK_UNLOCK_MAX_KEY_SIZE:
 *
 * The largest key la_quick_unlock_set_key() keeps, in bytes (4 KiB: a
 * password manager's key is 32 or 64 bytes; the service's own bound on a
 * right's secret is 64 KiB). A larger one is %LA_ERROR_INVALID_CONTEXT
 * (`org.example.LocalAuth.Error.LimitExceeded`), and nothing is sent.
 */
#define LA_QUICK_UNLOCK_MAX_KEY_SIZE 4096

/**
 * LA_QUICK_UNLOCK_MAX_DATABASE_ID_LENGTH:
 *
 * The longest database id, in bytes (a UUID is 32 or 36).
 */
#define LA_QUICK_UNLOCK_MAX_DATABASE_ID_LENGTH 128

/**
 * LA_QUICK_UNLOCK_RIGHT_PREFIX:
 *
 * What a database id's right identifier starts with: the right of database
 * `ID` is `quick-unlock:ID` among the app's rights (docs/APPS.md).
 */
#define LA_QUICK_UNLOCK_RIGHT_PREFIX "quick-unlock:"

#define LA_TYPE_QUICK_UNLOCK (la_quick_unlock_get_type ())
LA_AVAILABLE
G_DECLARE_FINAL_TYPE (LaQuickUnlock, la_quick_unlock, LA, QUICK_UNLOCK, GObject)

LA_AVAILABLE
LaQuickUnlock *la_quick_unlock_new (void);
LA_AVAILABLE
gchar *la_quick_unlock_right_identifier (const gchar *database_id, GError **error);

LA_AVAILABLE
void la_quick_unlock_set_key (LaQuickUnlock *self, const gchar *database_id, GBytes *key, GCancellable *cancellable,
                              GAsyncReadyCallback callback, gpointer user_data);
LA_AVAILABLE
gboolean la_quick_unlock_set_key_finish (LaQuickUnlock *self, GAsyncResult *result, GError **error);
LA_AVAILABLE
gboolean la_quick_unlock_set_key_sync (LaQuickUnlock *self, const gchar *database_id, GBytes *key,
                                       GCancellable *cancellable, GError **error);

LA_AVAILABLE
void la_quick_unlock_get_key (LaQuickUnlock *self, const gchar *database_id, const gchar *localized_reason,
                              GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data);
LA_AVAILABLE
GBytes *la_quick_unlock_get_key_finish (LaQuickUnlock *self, GAsyncResult *result, GError **error);
LA_AVAILABLE
GBytes *la_quick_unlock_get_key_sync (LaQuickUnlock *self, const gchar *database_id, const gchar *localized_reason,
                                      GCancellable *cancellable, GError **error);

LA_AVAILABLE
gboolean la_quick_unlock_has_key (LaQuickUnlock *self, const gchar *database_id, GError **error);

LA_AVAILABLE
void la_quick_unlock_reset_key (LaQuickUnlock *self, const gchar *database_id, GCancellable *cancellable,
                                GAsyncReadyCallback callback, gpointer user_data);
LA_AVAILABLE
gboolean la_quick_unlock_reset_key_finish (LaQuickUnlock *self, GAsyncResult *result, GError **error);
LA_AVAILABLE
gboolean la_quick_unlock_reset_key_sync (LaQuickUnlock *self, const gchar *database_id, GCancellable *cancellable,
                                         GError **error);

LA_AVAILABLE
void la_quick_unlock_reset (LaQuickUnlock *self, GCancellable *cancellable, GAsyncReadyCallback callback,
                            gpointer user_data);
LA_AVAILABLE
gboolean la_quick_unlock_reset_finish (LaQuickUnlock *self, GAsyncResult *result, GError **error);
LA_AVAILABLE
gboolean la_quick_unlock_reset_sync (LaQuickUnlock *self, GCancellable *cancellable, GError **error);

G_END_DECLS
