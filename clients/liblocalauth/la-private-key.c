/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* LaPrivateKey: Apple's LAPrivateKey of a persisted right. The private key
 * never leaves the service: each operation is a call (Sign, Decrypt,
 * ExchangeKeys) with the right's authorization handle, valid only for this
 * process's connection (docs/RIGHTS.md). */
#include "la-private.h"

/**
 * LaPrivateKey:
 *
 * Apple's `LAPrivateKey`: the P-256 private key of a right from the store,
 * usable while the right is authorized (else %LA_ERROR_NOT_INTERACTIVE).
 */
struct _LaPrivateKey {
  GObject parent_instance;
  GWeakRef right;
};

G_DEFINE_FINAL_TYPE (LaPrivateKey, la_private_key, G_TYPE_OBJECT)

static void
la_private_key_finalize (GObject *object)
{
  g_weak_ref_clear (&LA_PRIVATE_KEY (object)->right);
  G_OBJECT_CLASS (la_private_key_parent_class)->finalize (object);
}

static void
la_private_key_class_init (LaPrivateKeyClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = la_private_key_finalize;
}

static void
la_private_key_init (LaPrivateKey *self)
{
  g_weak_ref_init (&self->right, NULL);
}

LaPrivateKey *
la_private_key_new_for_right (LaRight *right)
{
  LaPrivateKey *key = g_object_new (LA_TYPE_PRIVATE_KEY, NULL);
  g_weak_ref_set (&key->right, right);
  return key;
}

/**
 * la_private_key_get_public_key:
 * @self: a right's key
 *
 * Returns: (transfer none) (nullable): the public key (65 bytes, 04 || X || Y)
 */
GBytes *
la_private_key_get_public_key (LaPrivateKey *self)
{
  g_return_val_if_fail (LA_IS_PRIVATE_KEY (self), NULL);
  g_autoptr (LaRight) right = g_weak_ref_get (&self->right);
  /* The right holds the bytes as long as it lives; a key outlives it only
   * if the app keeps the key alone. */
  return right ? la_right_get_public_key (right) : NULL;
}

static void
operation_done (GObject *source, GAsyncResult *result, gpointer data)
{
  GTask *task = data;
  GError *error = NULL;
  g_autoptr (GVariant) reply = g_dbus_proxy_call_finish (G_DBUS_PROXY (source), result, &error);
  if (reply == NULL)
    {
      la_client_map_error (&error);
      g_autoptr (LaRight) right = g_weak_ref_get (&LA_PRIVATE_KEY (g_task_get_source_object (task))->right);
      if (right != NULL)
        la_right_forget_authorization_after (right, error);
      g_task_return_error (task, error);
    }
  else
    {
      g_autoptr (GVariant) bytes = g_variant_get_child_value (reply, 0);
      g_task_return_pointer (task, g_variant_get_data_as_bytes (bytes), (GDestroyNotify) g_bytes_unref);
    }
  g_object_unref (task);
}

/* Calls `method` (handle, algorithm, then `rest`) with the right's handle. */
static void
call_with_handle (LaPrivateKey *self, gpointer tag, const gchar *method, const gchar *algorithm, GVariant *data,
                  GVariant *parameters, GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, tag);
  g_autoptr (LaRight) right = g_weak_ref_get (&self->right);
  const gchar *handle = right ? la_right_get_handle (right) : NULL;
  GError *error = NULL;
  g_autoptr (LaDBusLocalAuth) proxy = handle ? la_client_get_proxy (&error) : NULL;
  if (handle == NULL || proxy == NULL)
    {
      g_variant_unref (g_variant_ref_sink (data));
      if (parameters != NULL)
        g_variant_unref (g_variant_ref_sink (parameters));
      g_task_return_error (task, error ? error
                                       : la_client_new_error (LA_ERROR_NOT_INTERACTIVE, LA_ERROR_PREFIX "NotAuthorized",
                                                              "The right is not authorized; authorize it first."));
      g_object_unref (task);
      return;
    }
  GVariant *arguments = parameters != NULL ? g_variant_new ("(ss@ay@a{sv})", handle, algorithm, data, parameters)
                                           : g_variant_new ("(ss@ay)", handle, algorithm, data);
  g_dbus_proxy_call (G_DBUS_PROXY (proxy), method, arguments, G_DBUS_CALL_FLAGS_NONE, -1, cancellable,
                     operation_done, task);
}

static GVariant *
byte_array (GBytes *bytes)
{
  return g_variant_new_from_bytes (G_VARIANT_TYPE_BYTESTRING, bytes, TRUE);
}

/**
 * la_private_key_sign:
 * @self: a right's key
 * @data: what to sign (at most 8 KiB; a 32-byte digest for the digest algorithm)
 * @algorithm: %LA_KEY_ALGORITHM_ECDSA_SIGNATURE_MESSAGE_X962_SHA256 or
 *   %LA_KEY_ALGORITHM_ECDSA_SIGNATURE_DIGEST_X962_SHA256
 * @cancellable: (nullable): a #GCancellable
 * @callback: (scope async): called with the signature
 * @user_data: for @callback
 *
 * Apple's `sign(_:secKeyAlgorithm:)`: a DER ECDSA signature.
 */
void
la_private_key_sign (LaPrivateKey *self, GBytes *data, const gchar *algorithm, GCancellable *cancellable,
                     GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (LA_IS_PRIVATE_KEY (self) && data != NULL && algorithm != NULL);
  call_with_handle (self, la_private_key_sign, "Sign", algorithm, byte_array (data), NULL, cancellable, callback,
                    user_data);
}

/**
 * la_private_key_sign_finish:
 * @self: a right's key
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: (transfer full): the signature
 */
GBytes *
la_private_key_sign_finish (LaPrivateKey *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

/**
 * la_private_key_decrypt:
 * @self: a right's key
 * @data: the ciphertext (at most 8 KiB)
 * @algorithm: one of the ECIES algorithms (%LA_KEY_ALGORITHM_ECIES_ENCRYPTION_COFACTOR_VARIABLE_IV_X963_SHA256_AESGCM, …)
 * @cancellable: (nullable): a #GCancellable
 * @callback: (scope async): called with the plaintext
 * @user_data: for @callback
 *
 * Apple's `decrypt(_:secKeyAlgorithm:)`.
 */
void
la_private_key_decrypt (LaPrivateKey *self, GBytes *data, const gchar *algorithm, GCancellable *cancellable,
                        GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (LA_IS_PRIVATE_KEY (self) && data != NULL && algorithm != NULL);
  call_with_handle (self, la_private_key_decrypt, "Decrypt", algorithm, byte_array (data), NULL, cancellable,
                    callback, user_data);
}

/**
 * la_private_key_decrypt_finish:
 * @self: a right's key
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: (transfer full): the plaintext
 */
GBytes *
la_private_key_decrypt_finish (LaPrivateKey *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

/**
 * la_private_key_exchange_keys:
 * @self: a right's key
 * @public_key: the peer's P-256 public key (65 bytes)
 * @algorithm: one of the ECDH algorithms (%LA_KEY_ALGORITHM_ECDH_KEY_EXCHANGE_STANDARD, …)
 * @parameters: (nullable): an a{sv}: requested-size (u), shared-info (ay),
 *   for the X9.63 algorithms
 * @cancellable: (nullable): a #GCancellable
 * @callback: (scope async): called with the shared secret
 * @user_data: for @callback
 *
 * Apple's `exchangeKeys(publicKey:secKeyAlgorithm:secKeyParameters:)`.
 */
void
la_private_key_exchange_keys (LaPrivateKey *self, GBytes *public_key, const gchar *algorithm, GVariant *parameters,
                              GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (LA_IS_PRIVATE_KEY (self) && public_key != NULL && algorithm != NULL);
  g_return_if_fail (parameters == NULL || g_variant_is_of_type (parameters, G_VARIANT_TYPE_VARDICT));
  call_with_handle (self, la_private_key_exchange_keys, "ExchangeKeys", algorithm, byte_array (public_key),
                    parameters ? parameters : g_variant_new ("a{sv}", NULL), cancellable, callback, user_data);
}

/**
 * la_private_key_exchange_keys_finish:
 * @self: a right's key
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: (transfer full): the shared secret
 */
GBytes *
la_private_key_exchange_keys_finish (LaPrivateKey *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}
