/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* LaQuickUnlock: the quick-unlock interface of password managers
 * (KeePassXC's setKey / getKey / hasKey / reset, Bitwarden's
 * enroll_persistent / unlock) over the service's rights (docs/APPS.md,
 * docs/RIGHTS.md). A database's key is the secret of the app's right
 * `quick-unlock:ID`, required biometry-current-set: sealed by the service
 * (by the TPM where there is one), released only after a match of a finger
 * enrolled when it was kept, to this uid and app id only. */
#include "la-private.h"

#include <string.h>

struct _LaQuickUnlock {
  GObject parent_instance;
};

G_DEFINE_FINAL_TYPE (LaQuickUnlock, la_quick_unlock, G_TYPE_OBJECT)

enum { SIGNAL_STATUS, N_SIGNALS };
static guint signals[N_SIGNALS];

static void
la_quick_unlock_class_init (LaQuickUnlockClass *klass)
{
  /**
   * LaQuickUnlock::status:
   * @self: the quick unlock
   * @status: the service's EvaluationStatus while la_quick_unlock_get_key()
   *   waits for the finger (place-finger, no-match, ...)
   *
   * What to tell the person ("Touch the reader"). Emitted in the main
   * context of the thread that first used the library.
   */
  signals[SIGNAL_STATUS] = g_signal_new ("status", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                         G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void
la_quick_unlock_init (LaQuickUnlock *self)
{
}

/**
 * la_quick_unlock_new:
 *
 * Returns: (transfer full): a quick unlock for this process's app id (a
 *   sandboxed app's comes from its sandbox; otherwise `LOCALAUTH_APP_ID`,
 *   else the default #GApplication's id, else the program's name)
 */
LaQuickUnlock *
la_quick_unlock_new (void)
{
  return g_object_new (LA_TYPE_QUICK_UNLOCK, NULL);
}

/* ---- keys in memory ---- */

typedef struct {
  gsize size;
  guint8 bytes[];
} WipedBuffer;

static void
wipe_and_free (gpointer data)
{
  WipedBuffer *buffer = data;
  explicit_bzero (buffer->bytes, buffer->size);
  g_free (buffer);
}

/* A copy of the key whose memory is zeroed when the last reference goes,
 * and the reply's own copy zeroed now: the bytes GDBus read into the reply
 * message are writable heap memory that GLib frees without wiping. */
static GBytes *
take_key (GBytes *received)
{
  gsize size = 0;
  guint8 *data = (guint8 *) g_bytes_get_data (received, &size);
  WipedBuffer *buffer = g_malloc (sizeof (WipedBuffer) + size);
  buffer->size = size;
  if (size > 0)
    {
      memcpy (buffer->bytes, data, size);
      explicit_bzero (data, size);
    }
  return g_bytes_new_with_free_func (buffer->bytes, size, wipe_and_free, buffer);
}

/* ---- database ids ---- */

static gboolean
valid_database_id (const gchar *id)
{
  gsize length = id ? strlen (id) : 0;
  if (length == 0 || length > LA_QUICK_UNLOCK_MAX_DATABASE_ID_LENGTH || !g_ascii_isalnum (id[0]))
    return FALSE;
  for (gsize i = 1; i < length; i++)
    if (!g_ascii_isalnum (id[i]) && id[i] != '-' && id[i] != '_' && id[i] != '.')
      return FALSE;
  return TRUE;
}

/**
 * la_quick_unlock_right_identifier:
 * @database_id: the database's id: 1 to 128 bytes, ASCII letters, digits,
 *   `-`, `_` and `.`, starting with a letter or digit (a UUID as text, with
 *   or without its dashes, without braces)
 * @error: %LA_ERROR_INVALID_CONTEXT (`org.freedesktop.DBus.Error.InvalidArgs`)
 *   for any other id
 *
 * The rule every call of #LaQuickUnlock follows: database `ID` is the
 * app's right `quick-unlock:ID`. An id outside the rule is refused before
 * anything is sent, so no right of another name is ever touched.
 *
 * Returns: (transfer full) (nullable): the right's identifier
 */
gchar *
la_quick_unlock_right_identifier (const gchar *database_id, GError **error)
{
  if (!valid_database_id (database_id))
    {
      g_propagate_error (error, la_client_new_error (LA_ERROR_INVALID_CONTEXT, "org.freedesktop.DBus.Error.InvalidArgs",
                                                     "A quick-unlock database id is 1 to 128 ASCII letters, digits, "
                                                     "'-', '_' or '.', starting with a letter or digit."));
      return NULL;
    }
  return g_strconcat (LA_QUICK_UNLOCK_RIGHT_PREFIX, database_id, NULL);
}

static GVariant *
app_options (GBytes *secret)
{
  GVariantBuilder builder;
  g_variant_builder_init (&builder, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&builder, "{sv}", "app-id", g_variant_new_string (la_client_app_id ()));
  if (secret != NULL)
    g_variant_builder_add (&builder, "{sv}", "secret", g_variant_new_from_bytes (G_VARIANT_TYPE_BYTESTRING, secret, TRUE));
  return g_variant_builder_end (&builder);
}

/* A task that fails at once with `error` (taken). */
static void
fail_now (GTask *task, GError *error)
{
  g_task_return_error (task, error);
  g_object_unref (task);
}

/* ---- set ---- */

/**
 * la_quick_unlock_set_key:
 * @self: the quick unlock
 * @database_id: the database's id (la_quick_unlock_right_identifier())
 * @key: the key to keep: 1 to %LA_QUICK_UNLOCK_MAX_KEY_SIZE bytes
 * @cancellable: (nullable): a #GCancellable
 * @callback: (scope async): called when it is kept
 * @user_data: for @callback
 *
 * KeePassXC's `setKey(databaseUuid, key)`, Bitwarden's `enroll_persistent`:
 * keeps @key for the database, replacing any key it had. No finger is
 * asked; polkit may ask (org.example.LocalAuth.rights.manage), so no reply
 * timeout. The key is kept with the requirement biometry-current-set: once
 * a finger is added or removed, la_quick_unlock_get_key() fails with
 * `RightInvalidated` and the app asks for its master password again.
 */
void
la_quick_unlock_set_key (LaQuickUnlock *self, const gchar *database_id, GBytes *key, GCancellable *cancellable,
                         GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (LA_IS_QUICK_UNLOCK (self));
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, la_quick_unlock_set_key);
  GError *error = NULL;
  g_autofree gchar *identifier = la_quick_unlock_right_identifier (database_id, &error);
  if (identifier == NULL)
    return fail_now (task, error);
  gsize size = key ? g_bytes_get_size (key) : 0;
  if (size == 0)
    return fail_now (task, la_client_new_error (LA_ERROR_INVALID_CONTEXT, "org.freedesktop.DBus.Error.InvalidArgs",
                                                "A quick-unlock key cannot be empty."));
  if (size > LA_QUICK_UNLOCK_MAX_KEY_SIZE)
    return fail_now (task, la_client_new_error (LA_ERROR_INVALID_CONTEXT, LA_ERROR_PREFIX "LimitExceeded",
                                                "A quick-unlock key is at most 4096 bytes."));
  la_client_call ("SaveRight", g_variant_new ("(ss@a{sv})", identifier, "biometry-current-set", app_options (key)),
                  LA_NO_TIMEOUT, task);
}

/**
 * la_quick_unlock_set_key_finish:
 * @self: the quick unlock
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: %TRUE once the key is kept
 */
gboolean
la_quick_unlock_set_key_finish (LaQuickUnlock *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  g_autoptr (GVariant) reply = la_client_call_finish (result, error);
  return reply != NULL;
}

/* ---- get ---- */

typedef struct {
  gchar *reason;
  LaRight *right;
  gulong status_handler;
} GetKey;

static void
get_key_free (GetKey *get)
{
  if (get->right != NULL && get->status_handler != 0)
    g_signal_handler_disconnect (get->right, get->status_handler);
  /* Disposing the right ends its authorization in the service. */
  g_clear_object (&get->right);
  g_free (get->reason);
  g_free (get);
}

static void
forward_status (LaRight *right, const gchar *status, gpointer data)
{
  g_signal_emit (LA_QUICK_UNLOCK (data), signals[SIGNAL_STATUS], 0, status);
}

static void
key_loaded (GObject *source, GAsyncResult *result, gpointer data)
{
  GTask *task = data;
  GetKey *get = g_task_get_task_data (task);
  GError *error = NULL;
  g_autoptr (GBytes) received = la_secret_load_data_finish (LA_SECRET (source), result, &error);
  la_right_deauthorize (get->right);
  if (received == NULL)
    return fail_now (task, error);
  g_task_return_pointer (task, take_key (received), (GDestroyNotify) g_bytes_unref);
  g_object_unref (task);
}

static void
right_authorized (GObject *source, GAsyncResult *result, gpointer data)
{
  GTask *task = data;
  GError *error = NULL;
  if (!la_right_authorize_finish (LA_RIGHT (source), result, &error))
    return fail_now (task, error);
  la_secret_load_data (la_right_get_secret (LA_RIGHT (source)), NULL, key_loaded, task);
}

static void
right_found (GObject *source, GAsyncResult *result, gpointer data)
{
  GTask *task = data;
  GetKey *get = g_task_get_task_data (task);
  GError *error = NULL;
  get->right = la_right_store_right_for_identifier_finish (LA_RIGHT_STORE (source), result, &error);
  if (get->right == NULL)
    return fail_now (task, error);
  GCancellable *cancellable = g_task_get_cancellable (task);
  if (g_cancellable_is_cancelled (cancellable))
    return fail_now (task, la_client_new_error (LA_ERROR_APP_CANCEL, NULL, "The app cancelled."));
  get->status_handler = g_signal_connect (get->right, "status", G_CALLBACK (forward_status), g_task_get_source_object (task));
  la_right_authorize (get->right, get->reason, cancellable, right_authorized, task);
}

/**
 * la_quick_unlock_get_key:
 * @self: the quick unlock
 * @database_id: the database's id (la_quick_unlock_right_identifier())
 * @localized_reason: what the person is told ("Unlock Passwords.kdbx")
 * @cancellable: (nullable): cancelling ends the wait for the finger; the
 *   call then fails with %LA_ERROR_APP_CANCEL
 * @callback: (scope async): called with the key or the failure
 * @user_data: for @callback
 *
 * KeePassXC's `getKey(databaseUuid)`, Bitwarden's `unlock`: the key, after
 * a match of the person's finger (#LaQuickUnlock::status tells when to
 * touch). No reply timeout: it takes as long as the person takes (the
 * service bounds the scan). A database without a key fails at once with
 * %LA_ERROR_INVALID_CONTEXT (`RightNotFound`), before any scan; a wrong
 * finger with %LA_ERROR_AUTHENTICATION_FAILED; a key whose fingers changed
 * since with %LA_ERROR_INVALID_CONTEXT (`RightInvalidated`).
 */
void
la_quick_unlock_get_key (LaQuickUnlock *self, const gchar *database_id, const gchar *localized_reason,
                         GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (LA_IS_QUICK_UNLOCK (self));
  g_return_if_fail (localized_reason != NULL);
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, la_quick_unlock_get_key);
  g_task_set_check_cancellable (task, FALSE);
  GError *error = NULL;
  g_autofree gchar *identifier = la_quick_unlock_right_identifier (database_id, &error);
  if (identifier == NULL)
    return fail_now (task, error);
  GetKey *get = g_new0 (GetKey, 1);
  get->reason = g_strdup (localized_reason);
  g_task_set_task_data (task, get, (GDestroyNotify) get_key_free);
  la_right_store_right_for_identifier (la_right_store_get_default (), identifier, NULL, right_found, task);
}

/**
 * la_quick_unlock_get_key_finish:
 * @self: the quick unlock
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: (transfer full): the key; its memory is zeroed when the last
 *   reference to it goes
 */
GBytes *
la_quick_unlock_get_key_finish (LaQuickUnlock *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

/* ---- has ---- */

/* The app's rights whose identifiers are quick-unlock keys, from ListRights. */
static GPtrArray *
quick_unlock_identifiers (GVariant *reply)
{
  GPtrArray *identifiers = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GVariantIter) entries = la_right_list_entries (reply);
  GVariantDict *next;
  const gchar *identifier;
  while ((next = la_right_list_next (entries, &identifier)) != NULL)
    {
      g_autoptr (GVariantDict) fields = next;
      if (identifier != NULL && g_str_has_prefix (identifier, LA_QUICK_UNLOCK_RIGHT_PREFIX))
        g_ptr_array_add (identifiers, g_strdup (identifier));
    }
  return identifiers;
}

/**
 * la_quick_unlock_has_key:
 * @self: the quick unlock
 * @database_id: the database's id (la_quick_unlock_right_identifier())
 * @error: how it failed, as an %LA_ERROR
 *
 * KeePassXC's `hasKey(databaseUuid)`: whether a key is kept for the
 * database. No finger, nothing secret; one call to the service.
 *
 * Returns: %TRUE if a key is kept; %FALSE if none is, or with @error set
 */
gboolean
la_quick_unlock_has_key (LaQuickUnlock *self, const gchar *database_id, GError **error)
{
  g_return_val_if_fail (LA_IS_QUICK_UNLOCK (self), FALSE);
  g_autofree gchar *identifier = la_quick_unlock_right_identifier (database_id, error);
  if (identifier == NULL)
    return FALSE;
  g_autoptr (GVariant) reply = la_client_call_sync ("ListRights", g_variant_new ("(@a{sv})", app_options (NULL)), error);
  if (reply == NULL)
    return FALSE;
  g_autoptr (GPtrArray) identifiers = quick_unlock_identifiers (reply);
  return g_ptr_array_find_with_equal_func (identifiers, identifier, g_str_equal, NULL);
}

/* ---- reset ---- */

typedef struct {
  GPtrArray *identifiers; /* still to remove, the last first */
} Reset;

static void
reset_free (Reset *reset)
{
  g_clear_pointer (&reset->identifiers, g_ptr_array_unref);
  g_free (reset);
}

static void remove_next (GTask *task);

static void
removed (GObject *source, GAsyncResult *result, gpointer data)
{
  GTask *task = data;
  GError *error = NULL;
  g_autoptr (GVariant) reply = g_dbus_proxy_call_finish (G_DBUS_PROXY (source), result, &error);
  la_client_map_error (&error);
  g_autofree gchar *name = error ? la_error_get_dbus_error_name (error) : NULL;
  /* Gone already (another instance of the app removed it): forgotten all the same. */
  if (error != NULL && g_strcmp0 (name, LA_ERROR_PREFIX "RightNotFound") != 0)
    return fail_now (task, error);
  g_clear_error (&error);
  remove_next (task);
}

static void
remove_next (GTask *task)
{
  Reset *reset = g_task_get_task_data (task);
  if (reset->identifiers->len == 0)
    {
      g_task_return_boolean (task, TRUE);
      g_object_unref (task);
      return;
    }
  g_autofree gchar *identifier = g_ptr_array_steal_index (reset->identifiers, reset->identifiers->len - 1);
  GError *error = NULL;
  g_autoptr (LaDBusLocalAuth) proxy = la_client_get_proxy (&error);
  if (proxy == NULL)
    return fail_now (task, error);
  g_dbus_proxy_call (G_DBUS_PROXY (proxy), "RemoveRight", g_variant_new ("(s@a{sv})", identifier, app_options (NULL)),
                     G_DBUS_CALL_FLAGS_NONE, LA_NO_TIMEOUT, NULL, removed, task);
}

static void
listed_for_reset (GObject *source, GAsyncResult *result, gpointer data)
{
  GTask *inner = G_TASK (result);
  GTask *task = data;
  GError *error = NULL;
  g_autoptr (GVariant) reply = la_client_call_finish (G_ASYNC_RESULT (inner), &error);
  if (reply == NULL)
    return fail_now (task, error);
  Reset *reset = g_task_get_task_data (task);
  reset->identifiers = quick_unlock_identifiers (reply);
  remove_next (task);
}

static void
start_removing (LaQuickUnlock *self, GPtrArray *identifiers, GCancellable *cancellable, GAsyncReadyCallback callback,
                gpointer user_data, gpointer tag)
{
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, tag);
  Reset *reset = g_new0 (Reset, 1);
  g_task_set_task_data (task, reset, (GDestroyNotify) reset_free);
  if (identifiers != NULL)
    {
      reset->identifiers = identifiers;
      remove_next (task);
      return;
    }
  /* Every key of the app: listed first, then removed one by one (the
   * service has no call that removes by prefix, and RemoveAllRights would
   * take the app's other rights too). */
  la_client_call ("ListRights", g_variant_new ("(@a{sv})", app_options (NULL)), -1,
                  g_task_new (self, NULL, listed_for_reset, task));
}

/**
 * la_quick_unlock_reset_key:
 * @self: the quick unlock
 * @database_id: the database's id (la_quick_unlock_right_identifier())
 * @cancellable: (nullable): a #GCancellable
 * @callback: (scope async): called when it is forgotten
 * @user_data: for @callback
 *
 * KeePassXC's `reset(databaseUuid)`: forgets the database's key (the
 * service deletes its right). A database without a key is forgotten
 * already: success.
 */
void
la_quick_unlock_reset_key (LaQuickUnlock *self, const gchar *database_id, GCancellable *cancellable,
                           GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (LA_IS_QUICK_UNLOCK (self));
  GError *error = NULL;
  gchar *identifier = la_quick_unlock_right_identifier (database_id, &error);
  if (identifier == NULL)
    {
      GTask *task = g_task_new (self, cancellable, callback, user_data);
      g_task_set_source_tag (task, la_quick_unlock_reset_key);
      return fail_now (task, error);
    }
  GPtrArray *identifiers = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (identifiers, identifier);
  start_removing (self, identifiers, cancellable, callback, user_data, la_quick_unlock_reset_key);
}

/**
 * la_quick_unlock_reset_key_finish:
 * @self: the quick unlock
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: %TRUE once the key is forgotten
 */
gboolean
la_quick_unlock_reset_key_finish (LaQuickUnlock *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}

/**
 * la_quick_unlock_reset:
 * @self: the quick unlock
 * @cancellable: (nullable): a #GCancellable
 * @callback: (scope async): called when they are forgotten
 * @user_data: for @callback
 *
 * KeePassXC's `reset()`: forgets every quick-unlock key of this app; the
 * app's other rights stay.
 */
void
la_quick_unlock_reset (LaQuickUnlock *self, GCancellable *cancellable, GAsyncReadyCallback callback,
                       gpointer user_data)
{
  g_return_if_fail (LA_IS_QUICK_UNLOCK (self));
  start_removing (self, NULL, cancellable, callback, user_data, la_quick_unlock_reset);
}

/**
 * la_quick_unlock_reset_finish:
 * @self: the quick unlock
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: %TRUE once every key is forgotten
 */
gboolean
la_quick_unlock_reset_finish (LaQuickUnlock *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}
