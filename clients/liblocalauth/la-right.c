/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* LaRightStore, LaRight, LaSecret: Apple's LARightStore, LARight /
 * LAPersistedRight and LASecret over the service's rights methods
 * (docs/RIGHTS.md). A right from the store (it has an identifier) is
 * Apple's LAPersistedRight; one made with la_right_new() is a plain LARight,
 * authorized by an evaluation. Behaviour follows the Swift library
 * (Sources/LocalAuthentication/LARight.swift, LARightStore.swift). */
#include "la-private.h"

static const gchar *const requirement_names[] = {
  [LA_RIGHT_REQUIREMENT_DEFAULT] = "default",
  [LA_RIGHT_REQUIREMENT_BIOMETRY] = "biometry",
  [LA_RIGHT_REQUIREMENT_BIOMETRY_CURRENT_SET] = "biometry-current-set",
  [LA_RIGHT_REQUIREMENT_BIOMETRY_OR_PASSWORD] = "biometry-or-password",
};

static LaRightRequirement
requirement_for_name (const gchar *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (requirement_names); i++)
    if (g_strcmp0 (requirement_names[i], name) == 0)
      return (LaRightRequirement) i;
  return LA_RIGHT_REQUIREMENT_DEFAULT;
}

/* ---- LaSecret ---- */

/**
 * LaSecret:
 *
 * Apple's `LASecret`: the secret kept with a right.
 */
struct _LaSecret {
  GObject parent_instance;
  GWeakRef right;
};

G_DEFINE_FINAL_TYPE (LaSecret, la_secret, G_TYPE_OBJECT)

static void
la_secret_finalize (GObject *object)
{
  g_weak_ref_clear (&LA_SECRET (object)->right);
  G_OBJECT_CLASS (la_secret_parent_class)->finalize (object);
}

static void
la_secret_class_init (LaSecretClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = la_secret_finalize;
}

static void
la_secret_init (LaSecret *self)
{
  g_weak_ref_init (&self->right, NULL);
}

/* ---- LaRight ---- */

/**
 * LaRight:
 *
 * Apple's `LARight`, and `LAPersistedRight` when it came from the
 * #LaRightStore (it then has an identifier, a public key and a secret).
 */
struct _LaRight {
  GObject parent_instance;
  LaRightRequirement requirement;
  LaRightState state;
  gchar *identifier;
  GBytes *public_key;
  gchar *handle; /* the service's authorization, for this connection */
  LaSecret *secret;
  LaPrivateKey *key;
  gchar *request_id; /* of the authorization under way */
  LaDBusLocalAuth *status_proxy;
  gulong status_handler;
};

G_DEFINE_FINAL_TYPE (LaRight, la_right, G_TYPE_OBJECT)

enum { RIGHT_PROP_0, RIGHT_PROP_REQUIREMENT, RIGHT_PROP_STATE, RIGHT_PROP_IDENTIFIER, RIGHT_N_PROPS };
static GParamSpec *right_properties[RIGHT_N_PROPS];

enum { RIGHT_SIGNAL_STATUS, RIGHT_N_SIGNALS };
static guint right_signals[RIGHT_N_SIGNALS];

static void
set_state (LaRight *self, LaRightState state)
{
  if (self->state == state)
    return;
  self->state = state;
  g_object_notify_by_pspec (G_OBJECT (self), right_properties[RIGHT_PROP_STATE]);
}

static void
la_right_dispose (GObject *object)
{
  LaRight *self = LA_RIGHT (object);
  /* The service ends an authorization when the connection leaves or after
   * 300 s; a right that goes away ends it now. */
  la_right_deauthorize (self);
  g_clear_object (&self->secret);
  g_clear_object (&self->key);
  if (self->status_proxy != NULL)
    {
      g_signal_handler_disconnect (self->status_proxy, self->status_handler);
      g_clear_object (&self->status_proxy);
    }
  G_OBJECT_CLASS (la_right_parent_class)->dispose (object);
}

static void
la_right_finalize (GObject *object)
{
  LaRight *self = LA_RIGHT (object);
  g_free (self->identifier);
  g_free (self->request_id);
  g_clear_pointer (&self->public_key, g_bytes_unref);
  G_OBJECT_CLASS (la_right_parent_class)->finalize (object);
}

static void
la_right_get_property (GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
  LaRight *self = LA_RIGHT (object);
  switch (id)
    {
    case RIGHT_PROP_REQUIREMENT:
      g_value_set_enum (value, self->requirement);
      break;
    case RIGHT_PROP_STATE:
      g_value_set_enum (value, self->state);
      break;
    case RIGHT_PROP_IDENTIFIER:
      g_value_set_string (value, self->identifier);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
    }
}

static void
la_right_set_property (GObject *object, guint id, const GValue *value, GParamSpec *pspec)
{
  LaRight *self = LA_RIGHT (object);
  switch (id)
    {
    case RIGHT_PROP_REQUIREMENT:
      self->requirement = g_value_get_enum (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
    }
}

static void
la_right_class_init (LaRightClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  object_class->dispose = la_right_dispose;
  object_class->finalize = la_right_finalize;
  object_class->get_property = la_right_get_property;
  object_class->set_property = la_right_set_property;
  right_properties[RIGHT_PROP_REQUIREMENT] =
    g_param_spec_enum ("requirement", NULL, NULL, LA_TYPE_RIGHT_REQUIREMENT, LA_RIGHT_REQUIREMENT_DEFAULT,
                       G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  right_properties[RIGHT_PROP_STATE] =
    g_param_spec_enum ("state", NULL, NULL, LA_TYPE_RIGHT_STATE, LA_RIGHT_STATE_UNKNOWN,
                       G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /**
   * LaRight:identifier:
   *
   * The identifier it is stored under; %NULL for a right not from the store.
   */
  right_properties[RIGHT_PROP_IDENTIFIER] =
    g_param_spec_string ("identifier", NULL, NULL, NULL, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, RIGHT_N_PROPS, right_properties);

  /**
   * LaRight::status:
   * @self: the right
   * @status: the service's EvaluationStatus (place-finger, no-match, ...)
   *
   * Progress of the authorization of a right from the store, as
   * #LaContext::status.
   */
  right_signals[RIGHT_SIGNAL_STATUS] = g_signal_new ("status", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                                                     NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void
on_right_status (GVariant *parameters, gpointer data)
{
  LaRight *self = data;
  const gchar *request_id = NULL, *status = NULL;
  if (!g_variant_is_of_type (parameters, G_VARIANT_TYPE ("(ss)")))
    return;
  g_variant_get (parameters, "(&s&s)", &request_id, &status);
  if (g_strcmp0 (request_id, self->request_id) == 0)
    g_signal_emit (self, right_signals[RIGHT_SIGNAL_STATUS], 0, status);
}

static void
la_right_init (LaRight *self)
{
  self->secret = g_object_new (LA_TYPE_SECRET, NULL);
  g_weak_ref_set (&self->secret->right, self);
  self->key = la_private_key_new_for_right (self);
}

const gchar *
la_right_get_handle (LaRight *right)
{
  return right->handle;
}

void
la_right_forget_authorization_after (LaRight *right, const GError *error)
{
  g_autofree gchar *name = la_error_get_dbus_error_name (error);
  if (g_strcmp0 (name, LA_ERROR_PREFIX "NotAuthorized") == 0 || g_strcmp0 (name, LA_ERROR_PREFIX "RightInvalidated") == 0)
    {
      g_clear_pointer (&right->handle, g_free);
      set_state (right, LA_RIGHT_STATE_NOT_AUTHORIZED);
    }
}

/**
 * la_right_get_key:
 * @self: a right from the store
 *
 * Returns: (transfer none): the right's private key (Apple's `key`)
 */
LaPrivateKey *
la_right_get_key (LaRight *self)
{
  g_return_val_if_fail (LA_IS_RIGHT (self), NULL);
  return self->key;
}

/**
 * la_right_new:
 * @requirement: what authorizing it takes
 *
 * Returns: (transfer full): a right not kept by the store (Apple's `LARight(requirement:)`)
 */
LaRight *
la_right_new (LaRightRequirement requirement)
{
  return g_object_new (LA_TYPE_RIGHT, "requirement", requirement, NULL);
}

static LaRight *
persisted_right (const gchar *identifier, LaRightRequirement requirement, GBytes *public_key)
{
  LaRight *right = la_right_new (requirement);
  right->identifier = g_strdup (identifier);
  right->public_key = public_key ? g_bytes_ref (public_key) : NULL;
  return right;
}

LaRightRequirement
la_right_get_requirement (LaRight *self)
{
  g_return_val_if_fail (LA_IS_RIGHT (self), LA_RIGHT_REQUIREMENT_DEFAULT);
  return self->requirement;
}

LaRightState
la_right_get_state (LaRight *self)
{
  g_return_val_if_fail (LA_IS_RIGHT (self), LA_RIGHT_STATE_UNKNOWN);
  return self->state;
}

/**
 * la_right_get_identifier:
 * @self: a right
 *
 * Returns: (nullable): the identifier it is stored under
 */
const gchar *
la_right_get_identifier (LaRight *self)
{
  g_return_val_if_fail (LA_IS_RIGHT (self), NULL);
  return self->identifier;
}

/**
 * la_right_get_secret:
 * @self: a right from the store
 *
 * Returns: (transfer none): the right's secret (Apple's `secret`)
 */
LaSecret *
la_right_get_secret (LaRight *self)
{
  g_return_val_if_fail (LA_IS_RIGHT (self), NULL);
  return self->secret;
}

/**
 * la_right_get_public_key:
 * @self: a right from the store
 *
 * Returns: (transfer none) (nullable): the public key of its P-256 key pair
 *   (65 bytes, 04 || X || Y); %NULL for a right not from the store
 */
GBytes *
la_right_get_public_key (LaRight *self)
{
  g_return_val_if_fail (LA_IS_RIGHT (self), NULL);
  return self->public_key;
}

static GVariant *
authorization_options (const gchar *request_id)
{
  GVariantBuilder builder;
  g_variant_builder_init (&builder, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&builder, "{sv}", "app-id", g_variant_new_string (la_client_app_id ()));
  g_variant_builder_add (&builder, "{sv}", "request-id", g_variant_new_string (request_id));
  return g_variant_builder_end (&builder);
}

typedef struct {
  gchar *request_id;
  GCancellable *cancellable;
  gulong cancelled_handler;
} Authorization;

static void
authorization_free (Authorization *authorization)
{
  g_free (authorization->request_id);
  g_clear_object (&authorization->cancellable);
  g_free (authorization);
}

static void
on_authorization_cancelled (GCancellable *cancellable, gpointer data)
{
  g_autoptr (LaDBusLocalAuth) proxy = la_client_get_proxy (NULL);
  if (proxy != NULL)
    g_dbus_proxy_call (G_DBUS_PROXY (proxy), "Cancel", g_variant_new ("(s)", (const gchar *) data),
                       G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL, NULL);
}

static void
persisted_authorization_done (GObject *source, GAsyncResult *result, gpointer data)
{
  GTask *task = data;
  LaRight *self = g_task_get_source_object (task);
  Authorization *authorization = g_task_get_task_data (task);
  if (authorization->cancelled_handler != 0)
    g_cancellable_disconnect (authorization->cancellable, authorization->cancelled_handler);
  authorization->cancelled_handler = 0;
  g_clear_pointer (&self->request_id, g_free);
  GError *error = NULL;
  g_autoptr (GVariant) reply = g_dbus_proxy_call_finish (G_DBUS_PROXY (source), result, &error);
  if (reply == NULL)
    {
      la_client_map_error (&error);
      set_state (self, LA_RIGHT_STATE_NOT_AUTHORIZED);
      g_task_return_error (task, error);
    }
  else
    {
      g_free (self->handle);
      g_variant_get (reply, "(s)", &self->handle);
      set_state (self, LA_RIGHT_STATE_AUTHORIZED);
      g_task_return_boolean (task, TRUE);
    }
  g_object_unref (task);
}

static void
plain_authorization_done (GObject *source, GAsyncResult *result, gpointer data)
{
  GTask *task = data;
  LaRight *self = g_task_get_source_object (task);
  GError *error = NULL;
  if (la_context_evaluate_policy_finish (LA_CONTEXT (source), result, &error))
    {
      set_state (self, LA_RIGHT_STATE_AUTHORIZED);
      g_task_return_boolean (task, TRUE);
    }
  else
    {
      set_state (self, LA_RIGHT_STATE_NOT_AUTHORIZED);
      g_task_return_error (task, error);
    }
  g_object_unref (task);
}

static void
forward_status (LaRight *self, const gchar *status, LaContext *context)
{
  g_signal_emit (self, right_signals[RIGHT_SIGNAL_STATUS], 0, status);
}

/**
 * la_right_authorize:
 * @self: a right
 * @localized_reason: why the app asks
 * @cancellable: (nullable): cancelling sends the service Cancel; the
 *   authorization then fails with %LA_ERROR_APP_CANCEL
 * @callback: (scope async): called when it is authorized or failed
 * @user_data: for @callback
 *
 * Apple's `authorize(localizedReason:)`: a real evaluation with the right's
 * requirement. No reply timeout: it takes as long as the person takes.
 */
void
la_right_authorize (LaRight *self, const gchar *localized_reason, GCancellable *cancellable,
                    GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (LA_IS_RIGHT (self));
  g_return_if_fail (localized_reason != NULL);
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, la_right_authorize);
  g_task_set_check_cancellable (task, FALSE);
  set_state (self, LA_RIGHT_STATE_AUTHORIZING);
  if (self->identifier == NULL)
    {
      gboolean biometry_only = self->requirement == LA_RIGHT_REQUIREMENT_BIOMETRY
                               || self->requirement == LA_RIGHT_REQUIREMENT_BIOMETRY_CURRENT_SET;
      g_autoptr (LaContext) context = la_context_new ();
      g_signal_connect_object (context, "status", G_CALLBACK (forward_status), self, G_CONNECT_SWAPPED);
      la_context_evaluate_policy (context,
                                  biometry_only ? LA_POLICY_DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS
                                                : LA_POLICY_DEVICE_OWNER_AUTHENTICATION,
                                  localized_reason, cancellable, plain_authorization_done, task);
      return;
    }
  GError *error = NULL;
  g_autoptr (LaDBusLocalAuth) proxy = la_client_get_proxy (&error);
  if (proxy == NULL)
    {
      set_state (self, LA_RIGHT_STATE_NOT_AUTHORIZED);
      g_task_return_error (task, error);
      g_object_unref (task);
      return;
    }
  if (self->status_proxy == NULL)
    {
      self->status_proxy = g_object_ref (proxy);
      self->status_handler = la_client_connect_signal (proxy, "EvaluationStatus", on_right_status, self);
    }
  Authorization *authorization = g_new0 (Authorization, 1);
  authorization->request_id = g_uuid_string_random ();
  g_free (self->request_id);
  self->request_id = g_strdup (authorization->request_id);
  g_task_set_task_data (task, authorization, (GDestroyNotify) authorization_free);
  g_dbus_proxy_call (G_DBUS_PROXY (proxy), "AuthorizeRight",
                     g_variant_new ("(ss@a{sv})", self->identifier, localized_reason,
                                    authorization_options (authorization->request_id)),
                     G_DBUS_CALL_FLAGS_NONE, LA_NO_TIMEOUT, NULL, persisted_authorization_done, task);
  if (cancellable != NULL)
    {
      authorization->cancellable = g_object_ref (cancellable);
      authorization->cancelled_handler = g_cancellable_connect (cancellable, G_CALLBACK (on_authorization_cancelled),
                                                                g_strdup (authorization->request_id), g_free);
    }
}

/**
 * la_right_authorize_finish:
 * @self: a right
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: %TRUE once authorized
 */
gboolean
la_right_authorize_finish (LaRight *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}

/**
 * la_right_check_can_authorize:
 * @self: a right
 * @error: why not, as an %LA_ERROR
 *
 * Apple's `checkCanAuthorize()`: a preflight, one call to the service.
 *
 * Returns: %TRUE if it can be authorized now
 */
gboolean
la_right_check_can_authorize (LaRight *self, GError **error)
{
  g_return_val_if_fail (LA_IS_RIGHT (self), FALSE);
  if (self->identifier == NULL)
    {
      g_autoptr (LaContext) context = la_context_new ();
      gboolean biometry_only = self->requirement == LA_RIGHT_REQUIREMENT_BIOMETRY
                               || self->requirement == LA_RIGHT_REQUIREMENT_BIOMETRY_CURRENT_SET;
      return la_context_can_evaluate_policy (context,
                                             biometry_only ? LA_POLICY_DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS
                                                           : LA_POLICY_DEVICE_OWNER_AUTHENTICATION,
                                             error);
    }
  g_autoptr (GVariant) reply = la_client_call_sync (
    "CanAuthorizeRight", g_variant_new ("(s@a{sv})", self->identifier, la_client_rights_options ()), error);
  return reply != NULL;
}

/**
 * la_right_deauthorize:
 * @self: a right
 *
 * Apple's `deauthorize()`: ends the authorization (the service forgets its handle).
 */
void
la_right_deauthorize (LaRight *self)
{
  g_return_if_fail (LA_IS_RIGHT (self));
  if (self->handle != NULL)
    {
      g_autoptr (LaDBusLocalAuth) proxy = la_client_get_proxy (NULL);
      if (proxy != NULL)
        g_dbus_proxy_call (G_DBUS_PROXY (proxy), "Deauthorize", g_variant_new ("(s)", self->handle),
                           G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL, NULL);
      g_clear_pointer (&self->handle, g_free);
    }
  if (self->state == LA_RIGHT_STATE_AUTHORIZED)
    set_state (self, LA_RIGHT_STATE_NOT_AUTHORIZED);
}

/* ---- LaSecret ---- */

static void
secret_loaded (GObject *source, GAsyncResult *result, gpointer data)
{
  GTask *task = data;
  GError *error = NULL;
  g_autoptr (GVariant) reply = g_dbus_proxy_call_finish (G_DBUS_PROXY (source), result, &error);
  if (reply == NULL)
    {
      la_client_map_error (&error);
      LaRight *right = g_weak_ref_get (&LA_SECRET (g_task_get_source_object (task))->right);
      if (right != NULL)
        la_right_forget_authorization_after (right, error);
      g_clear_object (&right);
      g_task_return_error (task, error);
    }
  else
    {
      g_autoptr (GVariant) bytes = g_variant_get_child_value (reply, 0);
      g_task_return_pointer (task, g_variant_get_data_as_bytes (bytes), (GDestroyNotify) g_bytes_unref);
    }
  g_object_unref (task);
}

/**
 * la_secret_load_data:
 * @self: a right's secret
 * @cancellable: (nullable): a #GCancellable
 * @callback: (scope async): called with the secret
 * @user_data: for @callback
 *
 * Apple's `loadData()`: the secret, while its right is authorized (else
 * %LA_ERROR_NOT_INTERACTIVE).
 */
void
la_secret_load_data (LaSecret *self, GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (LA_IS_SECRET (self));
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, la_secret_load_data);
  g_autoptr (LaRight) right = g_weak_ref_get (&self->right);
  if (right == NULL || right->handle == NULL)
    {
      g_task_return_error (task, la_client_new_error (LA_ERROR_NOT_INTERACTIVE, LA_ERROR_PREFIX "NotAuthorized",
                                                      "The right is not authorized; authorize it first."));
      g_object_unref (task);
      return;
    }
  GError *error = NULL;
  g_autoptr (LaDBusLocalAuth) proxy = la_client_get_proxy (&error);
  if (proxy == NULL)
    {
      g_task_return_error (task, error);
      g_object_unref (task);
      return;
    }
  g_dbus_proxy_call (G_DBUS_PROXY (proxy), "LoadSecret", g_variant_new ("(s)", right->handle),
                     G_DBUS_CALL_FLAGS_NONE, -1, cancellable, secret_loaded, task);
}

/**
 * la_secret_load_data_finish:
 * @self: a right's secret
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: (transfer full): the secret's bytes
 */
GBytes *
la_secret_load_data_finish (LaSecret *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

/* ---- LaRightStore ---- */

/**
 * LaRightStore:
 *
 * Apple's `LARightStore`: rights the service keeps for this user and app.
 * The app is the sandbox's for a Flatpak or snap app; otherwise
 * `LOCALAUTH_APP_ID`, else the default #GApplication's id, else the
 * program's name.
 */
struct _LaRightStore {
  GObject parent_instance;
};

G_DEFINE_FINAL_TYPE (LaRightStore, la_right_store, G_TYPE_OBJECT)

static void
la_right_store_class_init (LaRightStoreClass *klass)
{
}

static void
la_right_store_init (LaRightStore *self)
{
}

/**
 * la_right_store_get_default:
 *
 * Returns: (transfer none): the store (Apple's `LARightStore.shared`)
 */
LaRightStore *
la_right_store_get_default (void)
{
  static LaRightStore *store;
  if (g_once_init_enter (&store))
    g_once_init_leave (&store, g_object_new (LA_TYPE_RIGHT_STORE, NULL));
  return store;
}

/**
 * la_right_store_get_app_id:
 * @self: the store
 *
 * Returns: the app id this process sends (a sandboxed app's comes from its sandbox instead)
 */
const gchar *
la_right_store_get_app_id (LaRightStore *self)
{
  return la_client_app_id ();
}

typedef struct {
  gchar *identifier;
  LaRightRequirement requirement;
} SavedRight;

static void
saved_right_free (SavedRight *saved)
{
  g_free (saved->identifier);
  g_free (saved);
}

/**
 * la_right_store_save_right:
 * @self: the store
 * @right: the right to keep (its requirement)
 * @identifier: its identifier (1 to 256 bytes)
 * @secret: (nullable): a secret to keep with it (at most 64 KiB)
 * @cancellable: (nullable): a #GCancellable
 * @callback: (scope async): called when it is kept
 * @user_data: for @callback
 *
 * Apple's `saveRight(_:identifier:secret:)`: replaces a right of that
 * identifier. polkit may ask (org.example.LocalAuth.rights.manage), so no
 * reply timeout.
 */
void
la_right_store_save_right (LaRightStore *self, LaRight *right, const gchar *identifier, GBytes *secret,
                           GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (LA_IS_RIGHT (right));
  g_return_if_fail (identifier != NULL);
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, la_right_store_save_right);
  SavedRight *saved = g_new0 (SavedRight, 1);
  saved->identifier = g_strdup (identifier);
  saved->requirement = right->requirement;
  g_task_set_task_data (task, saved, (GDestroyNotify) saved_right_free);
  GVariantBuilder options;
  g_variant_builder_init (&options, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&options, "{sv}", "app-id", g_variant_new_string (la_client_app_id ()));
  if (secret != NULL)
    g_variant_builder_add (&options, "{sv}", "secret", g_variant_new_from_bytes (G_VARIANT_TYPE_BYTESTRING, secret, TRUE));
  la_client_call ("SaveRight",
                  g_variant_new ("(ssa{sv})", identifier, requirement_names[right->requirement], &options),
                  LA_NO_TIMEOUT, task);
}

/**
 * la_right_store_save_right_finish:
 * @self: the store
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: (transfer full): the persisted right
 */
LaRight *
la_right_store_save_right_finish (LaRightStore *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  g_autoptr (GVariant) reply = la_client_call_finish (result, error);
  if (reply == NULL)
    return NULL;
  SavedRight *saved = g_task_get_task_data (G_TASK (result));
  g_autoptr (GVariant) key = g_variant_get_child_value (reply, 0);
  g_autoptr (GBytes) public_key = g_variant_get_data_as_bytes (key);
  return persisted_right (saved->identifier, saved->requirement, public_key);
}

/**
 * la_right_store_right_for_identifier:
 * @self: the store
 * @identifier: the right's identifier
 * @cancellable: (nullable): a #GCancellable
 * @callback: (scope async): called with the right
 * @user_data: for @callback
 *
 * Apple's `right(forIdentifier:)`; a missing right is
 * %LA_ERROR_INVALID_CONTEXT (org.example.LocalAuth.Error.RightNotFound).
 */
void
la_right_store_right_for_identifier (LaRightStore *self, const gchar *identifier, GCancellable *cancellable,
                                     GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (identifier != NULL);
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, la_right_store_right_for_identifier);
  g_task_set_task_data (task, g_strdup (identifier), g_free);
  la_client_call ("ListRights", g_variant_new ("(@a{sv})", la_client_rights_options ()), -1, task);
}

GVariantIter *
la_right_list_entries (GVariant *reply)
{
  g_autoptr (GVariant) entries = g_variant_get_child_value (reply, 0);
  return g_variant_iter_new (entries);
}

GVariantDict *
la_right_list_next (GVariantIter *entries, const gchar **identifier)
{
  g_autoptr (GVariant) entry = g_variant_iter_next_value (entries);
  if (entry == NULL)
    return NULL;
  GVariantDict *fields = g_variant_dict_new (entry);
  *identifier = NULL;
  g_variant_dict_lookup (fields, "identifier", "&s", identifier);
  return fields;
}

/**
 * la_right_store_right_for_identifier_finish:
 * @self: the store
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: (transfer full): the right
 */
LaRight *
la_right_store_right_for_identifier_finish (LaRightStore *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  g_autoptr (GVariant) reply = la_client_call_finish (result, error);
  if (reply == NULL)
    return NULL;
  const gchar *wanted = g_task_get_task_data (G_TASK (result));
  g_autoptr (GVariantIter) entries = la_right_list_entries (reply);
  GVariantDict *next;
  const gchar *identifier;
  while ((next = la_right_list_next (entries, &identifier)) != NULL)
    {
      g_autoptr (GVariantDict) fields = next;
      if (g_strcmp0 (identifier, wanted) != 0)
        continue;
      const gchar *requirement = NULL;
      g_variant_dict_lookup (fields, "requirement", "&s", &requirement);
      g_autoptr (GVariant) key = g_variant_dict_lookup_value (fields, "public-key", G_VARIANT_TYPE_BYTESTRING);
      g_autoptr (GBytes) public_key = key ? g_variant_get_data_as_bytes (key) : NULL;
      return persisted_right (identifier, requirement_for_name (requirement), public_key);
    }
  g_propagate_error (error, la_client_new_error (LA_ERROR_INVALID_CONTEXT, LA_ERROR_PREFIX "RightNotFound",
                                                 "No right is stored under this identifier."));
  return NULL;
}

/**
 * la_right_store_remove_right_for_identifier:
 * @self: the store
 * @identifier: the right's identifier
 * @cancellable: (nullable): a #GCancellable
 * @callback: (scope async): called when it is removed
 * @user_data: for @callback
 *
 * Apple's `removeRight(forIdentifier:)`; its authorizations end.
 */
void
la_right_store_remove_right_for_identifier (LaRightStore *self, const gchar *identifier, GCancellable *cancellable,
                                            GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (identifier != NULL);
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, la_right_store_remove_right_for_identifier);
  la_client_call ("RemoveRight", g_variant_new ("(s@a{sv})", identifier, la_client_rights_options ()),
                  LA_NO_TIMEOUT, task);
}

/**
 * la_right_store_remove_right_for_identifier_finish:
 * @self: the store
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: %TRUE once removed
 */
gboolean
la_right_store_remove_right_for_identifier_finish (LaRightStore *self, GAsyncResult *result, GError **error)
{
  g_autoptr (GVariant) reply = la_client_call_finish (result, error);
  return reply != NULL;
}

/**
 * la_right_store_remove_all_rights:
 * @self: the store
 * @cancellable: (nullable): a #GCancellable
 * @callback: (scope async): called when they are removed
 * @user_data: for @callback
 *
 * Apple's `removeAllRights()`: every right of this app.
 */
void
la_right_store_remove_all_rights (LaRightStore *self, GCancellable *cancellable, GAsyncReadyCallback callback,
                                  gpointer user_data)
{
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, la_right_store_remove_all_rights);
  la_client_call ("RemoveAllRights", g_variant_new ("(@a{sv})", la_client_rights_options ()), LA_NO_TIMEOUT, task);
}

/**
 * la_right_store_remove_all_rights_finish:
 * @self: the store
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: %TRUE once removed
 */
gboolean
la_right_store_remove_all_rights_finish (LaRightStore *self, GAsyncResult *result, GError **error)
{
  g_autoptr (GVariant) reply = la_client_call_finish (result, error);
  return reply != NULL;
}
