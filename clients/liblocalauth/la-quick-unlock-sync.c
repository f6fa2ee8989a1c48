/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The blocking forms of LaQuickUnlock's calls, for apps whose interface is
 * synchronous (KeePassXC's QuickUnlockInterface, a Rust trait over FFI):
 * each runs its asynchronous form in a main context of its own until it
 * answers, so it may be called from any thread, and never runs the app's
 * own main loop (no reentrancy into the app). */
#include "la-private.h"

static void
remember_result (GObject *source, GAsyncResult *result, gpointer data)
{
  *(GAsyncResult **) data = g_object_ref (result);
}

/* The process's proxy is made in the caller's context first: its signals
 * and property updates belong to the app's main loop, not to the private
 * context, which is gone after the call. */
static GMainContext *
enter_private_context (void)
{
  g_autoptr (LaDBusLocalAuth) proxy = la_client_get_proxy (NULL);
  GMainContext *context = g_main_context_new ();
  g_main_context_push_thread_default (context);
  return context;
}

static void
wait_in (GMainContext *context, GAsyncResult **result)
{
  while (*result == NULL)
    g_main_context_iteration (context, TRUE);
  g_main_context_pop_thread_default (context);
  g_main_context_unref (context);
}

/**
 * la_quick_unlock_set_key_sync:
 * @self: the quick unlock
 * @database_id: the database's id (la_quick_unlock_right_identifier())
 * @key: the key to keep: 1 to %LA_QUICK_UNLOCK_MAX_KEY_SIZE bytes
 * @cancellable: (nullable): a #GCancellable
 * @error: how it failed, as an %LA_ERROR
 *
 * la_quick_unlock_set_key(), blocking until it answers.
 *
 * Returns: %TRUE once the key is kept
 */
gboolean
la_quick_unlock_set_key_sync (LaQuickUnlock *self, const gchar *database_id, GBytes *key, GCancellable *cancellable,
                              GError **error)
{
  g_return_val_if_fail (LA_IS_QUICK_UNLOCK (self), FALSE);
  GAsyncResult *result = NULL;
  GMainContext *context = enter_private_context ();
  la_quick_unlock_set_key (self, database_id, key, cancellable, remember_result, &result);
  wait_in (context, &result);
  gboolean kept = la_quick_unlock_set_key_finish (self, result, error);
  g_object_unref (result);
  return kept;
}

/**
 * la_quick_unlock_get_key_sync:
 * @self: the quick unlock
 * @database_id: the database's id (la_quick_unlock_right_identifier())
 * @localized_reason: what the person is told
 * @cancellable: (nullable): cancelling (from another thread) ends the wait
 *   for the finger with %LA_ERROR_APP_CANCEL
 * @error: how it failed, as an %LA_ERROR
 *
 * la_quick_unlock_get_key(), blocking until the finger answers. Its
 * #LaQuickUnlock::status signals reach the main context of the thread that
 * first used the library, if that one runs.
 *
 * Returns: (transfer full): the key, zeroed when the last reference goes
 */
GBytes *
la_quick_unlock_get_key_sync (LaQuickUnlock *self, const gchar *database_id, const gchar *localized_reason,
                              GCancellable *cancellable, GError **error)
{
  g_return_val_if_fail (LA_IS_QUICK_UNLOCK (self), NULL);
  GAsyncResult *result = NULL;
  GMainContext *context = enter_private_context ();
  la_quick_unlock_get_key (self, database_id, localized_reason, cancellable, remember_result, &result);
  wait_in (context, &result);
  GBytes *key = la_quick_unlock_get_key_finish (self, result, error);
  g_object_unref (result);
  return key;
}

/**
 * la_quick_unlock_reset_key_sync:
 * @self: the quick unlock
 * @database_id: the database's id (la_quick_unlock_right_identifier())
 * @cancellable: (nullable): a #GCancellable
 * @error: how it failed, as an %LA_ERROR
 *
 * la_quick_unlock_reset_key(), blocking until it answers.
 *
 * Returns: %TRUE once the key is forgotten
 */
gboolean
la_quick_unlock_reset_key_sync (LaQuickUnlock *self, const gchar *database_id, GCancellable *cancellable,
                                GError **error)
{
  g_return_val_if_fail (LA_IS_QUICK_UNLOCK (self), FALSE);
  GAsyncResult *result = NULL;
  GMainContext *context = enter_private_context ();
  la_quick_unlock_reset_key (self, database_id, cancellable, remember_result, &result);
  wait_in (context, &result);
  gboolean forgotten = la_quick_unlock_reset_key_finish (self, result, error);
  g_object_unref (result);
  return forgotten;
}

/**
 * la_quick_unlock_reset_sync:
 * @self: the quick unlock
 * @cancellable: (nullable): a #GCancellable
 * @error: how it failed, as an %LA_ERROR
 *
 * la_quick_unlock_reset(), blocking until it answers.
 *
 * Returns: %TRUE once every key of the app is forgotten
 */
gboolean
la_quick_unlock_reset_sync (LaQuickUnlock *self, GCancellable *cancellable, GError **error)
{
  g_return_val_if_fail (LA_IS_QUICK_UNLOCK (self), FALSE);
  GAsyncResult *result = NULL;
  GMainContext *context = enter_private_context ();
  la_quick_unlock_reset (self, cancellable, remember_result, &result);
  wait_in (context, &result);
  gboolean forgotten = la_quick_unlock_reset_finish (self, result, error);
  g_object_unref (result);
  return forgotten;
}
