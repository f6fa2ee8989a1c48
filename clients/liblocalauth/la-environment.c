/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* LaEnvironment: Apple's LAEnvironment.currentUser over GetEnvironment,
 * SubscribeEnvironment and the EnvironmentChanged signal (believed only from
 * the real owner of the service's name). */
#include "la-private.h"

/**
 * LaEnvironment:
 *
 * Apple's `LAEnvironment` for the user this process runs as: its
 * properties are `state.biometry` and `state.userPassword` flattened; the
 * #LaEnvironment::changed signal stands for Apple's observers.
 */
struct _LaEnvironment {
  GObject parent_instance;
  LaBiometryType biometry_type;
  gboolean biometry_enrolled;
  gboolean biometry_locked_out;
  gboolean biometry_usable;
  gboolean built_in_sensor_inaccessible;
  gboolean password_set;
  GBytes *biometry_state_hash;

  LaDBusLocalAuth *updates_proxy;
  gulong updates_handler;
};

G_DEFINE_FINAL_TYPE (LaEnvironment, la_environment, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_BIOMETRY_TYPE,
  PROP_BIOMETRY_ENROLLED,
  PROP_BIOMETRY_LOCKED_OUT,
  PROP_BIOMETRY_USABLE,
  PROP_BUILT_IN_SENSOR_INACCESSIBLE,
  PROP_PASSWORD_SET,
  PROP_BIOMETRY_STATE_HASH,
  N_PROPS
};
static GParamSpec *properties[N_PROPS];

enum { SIGNAL_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void
la_environment_get_property (GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
  LaEnvironment *self = LA_ENVIRONMENT (object);
  switch (id)
    {
    case PROP_BIOMETRY_TYPE:
      g_value_set_enum (value, self->biometry_type);
      break;
    case PROP_BIOMETRY_ENROLLED:
      g_value_set_boolean (value, self->biometry_enrolled);
      break;
    case PROP_BIOMETRY_LOCKED_OUT:
      g_value_set_boolean (value, self->biometry_locked_out);
      break;
    case PROP_BIOMETRY_USABLE:
      g_value_set_boolean (value, self->biometry_usable);
      break;
    case PROP_BUILT_IN_SENSOR_INACCESSIBLE:
      g_value_set_boolean (value, self->built_in_sensor_inaccessible);
      break;
    case PROP_PASSWORD_SET:
      g_value_set_boolean (value, self->password_set);
      break;
    case PROP_BIOMETRY_STATE_HASH:
      g_value_set_boxed (value, self->biometry_state_hash);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
    }
}

static void
la_environment_class_init (LaEnvironmentClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  object_class->get_property = la_environment_get_property;
  const GParamFlags flags = G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;
  properties[PROP_BIOMETRY_TYPE] =
    g_param_spec_enum ("biometry-type", NULL, NULL, LA_TYPE_BIOMETRY_TYPE, LA_BIOMETRY_TYPE_NONE, flags);
  properties[PROP_BIOMETRY_ENROLLED] = g_param_spec_boolean ("biometry-enrolled", NULL, NULL, FALSE, flags);
  properties[PROP_BIOMETRY_LOCKED_OUT] = g_param_spec_boolean ("biometry-locked-out", NULL, NULL, FALSE, flags);
  properties[PROP_BIOMETRY_USABLE] = g_param_spec_boolean ("biometry-usable", NULL, NULL, FALSE, flags);
  properties[PROP_BUILT_IN_SENSOR_INACCESSIBLE] =
    g_param_spec_boolean ("built-in-sensor-inaccessible", NULL, NULL, FALSE, flags);
  properties[PROP_PASSWORD_SET] = g_param_spec_boolean ("password-set", NULL, NULL, FALSE, flags);
  /**
   * LaEnvironment:biometry-state-hash:
   *
   * As la_context_get_evaluated_policy_domain_state(); empty without a reader.
   */
  properties[PROP_BIOMETRY_STATE_HASH] =
    g_param_spec_boxed ("biometry-state-hash", NULL, NULL, G_TYPE_BYTES, flags);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /**
   * LaEnvironment::changed:
   * @self: the environment
   *
   * The state changed (a print enrolled or deleted, the lockout, a reader
   * plugged or unplugged, the lid, sleep); the properties hold the new
   * state. Only after la_environment_start_updates().
   */
  signals[SIGNAL_CHANGED] = g_signal_new ("changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                          NULL, G_TYPE_NONE, 0);
}

static void
la_environment_init (LaEnvironment *self)
{
}

/**
 * la_environment_get_current_user:
 *
 * Returns: (transfer none): Apple's `LAEnvironment.currentUser`; its state
 *   is read from the service by la_environment_refresh()
 */
LaEnvironment *
la_environment_get_current_user (void)
{
  static LaEnvironment *current;
  if (g_once_init_enter (&current))
    g_once_init_leave (&current, g_object_new (LA_TYPE_ENVIRONMENT, NULL));
  return current;
}

static void
set_boolean (LaEnvironment *self, gboolean *field, GVariantDict *state, const gchar *key, guint property,
             gboolean *changed)
{
  gboolean value = FALSE;
  g_variant_dict_lookup (state, key, "b", &value);
  if (*field != value)
    {
      *field = value;
      g_object_notify_by_pspec (G_OBJECT (self), properties[property]);
      *changed = TRUE;
    }
}

/* Takes the service's a{sv}; unknown keys are ignored (the contract may add some). */
static gboolean
apply_state (LaEnvironment *self, GVariant *dictionary)
{
  g_autoptr (GVariantDict) state = g_variant_dict_new (dictionary);
  gboolean changed = FALSE;
  g_object_freeze_notify (G_OBJECT (self));
  guint32 type = 0;
  g_variant_dict_lookup (state, "biometry-type", "u", &type);
  LaBiometryType biometry_type = type == 1 || type == 2 || type == 4 ? (LaBiometryType) type : LA_BIOMETRY_TYPE_NONE;
  if (biometry_type != self->biometry_type)
    {
      self->biometry_type = biometry_type;
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_BIOMETRY_TYPE]);
      changed = TRUE;
    }
  set_boolean (self, &self->biometry_enrolled, state, "biometry-enrolled", PROP_BIOMETRY_ENROLLED, &changed);
  set_boolean (self, &self->biometry_locked_out, state, "biometry-locked-out", PROP_BIOMETRY_LOCKED_OUT, &changed);
  set_boolean (self, &self->biometry_usable, state, "biometry-usable", PROP_BIOMETRY_USABLE, &changed);
  set_boolean (self, &self->built_in_sensor_inaccessible, state, "built-in-sensor-inaccessible",
               PROP_BUILT_IN_SENSOR_INACCESSIBLE, &changed);
  set_boolean (self, &self->password_set, state, "password-set", PROP_PASSWORD_SET, &changed);
  g_autoptr (GVariant) hash = g_variant_dict_lookup_value (state, "biometry-state-hash", G_VARIANT_TYPE_BYTESTRING);
  GBytes *bytes = hash ? g_variant_get_data_as_bytes (hash) : g_bytes_new (NULL, 0);
  if (self->biometry_state_hash == NULL || !g_bytes_equal (bytes, self->biometry_state_hash))
    {
      g_clear_pointer (&self->biometry_state_hash, g_bytes_unref);
      self->biometry_state_hash = g_bytes_ref (bytes);
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_BIOMETRY_STATE_HASH]);
      changed = TRUE;
    }
  g_bytes_unref (bytes);
  g_object_thaw_notify (G_OBJECT (self));
  return changed;
}

/**
 * la_environment_refresh:
 * @self: the environment
 * @error: (nullable): where a failure goes, as an %LA_ERROR
 *
 * Reads the state now (GetEnvironment). Without the service, every
 * property is %FALSE / none.
 *
 * Returns: %TRUE if the service answered
 */
gboolean
la_environment_refresh (LaEnvironment *self, GError **error)
{
  g_return_val_if_fail (LA_IS_ENVIRONMENT (self), FALSE);
  g_autoptr (GVariant) reply = la_client_call_sync ("GetEnvironment", NULL, error);
  g_autoptr (GVariant) state = reply ? g_variant_get_child_value (reply, 0) : g_variant_new ("a{sv}", NULL);
  apply_state (self, g_variant_ref_sink (state));
  g_variant_unref (state);
  return reply != NULL;
}

static void
on_changed (GVariant *parameters, gpointer data)
{
  LaEnvironment *self = data;
  if (!g_variant_is_of_type (parameters, G_VARIANT_TYPE ("(a{sv})")))
    return;
  g_autoptr (GVariant) state = g_variant_get_child_value (parameters, 0);
  apply_state (self, state);
  /* Each change is sent once by the service: tell the app even when the
   * keys this library knows stayed the same. */
  g_signal_emit (self, signals[SIGNAL_CHANGED], 0);
}

/**
 * la_environment_start_updates:
 * @self: the environment
 * @error: (nullable): where a failure goes, as an %LA_ERROR
 *
 * From now on, #LaEnvironment::changed is emitted on each change
 * (SubscribeEnvironment; Apple's `addObserver(_:)`). The properties hold
 * the state now when it returns.
 *
 * Returns: %TRUE once subscribed
 */
gboolean
la_environment_start_updates (LaEnvironment *self, GError **error)
{
  g_return_val_if_fail (LA_IS_ENVIRONMENT (self), FALSE);
  g_autoptr (LaDBusLocalAuth) proxy = la_client_get_proxy (error);
  if (proxy == NULL)
    return FALSE;
  if (self->updates_proxy == NULL)
    {
      self->updates_proxy = g_object_ref (proxy);
      self->updates_handler = la_client_connect_signal (proxy, "EnvironmentChanged", on_changed, self);
    }
  g_autoptr (GVariant) reply = la_client_call_sync ("SubscribeEnvironment", NULL, error);
  if (reply == NULL)
    {
      la_environment_stop_updates (self);
      return FALSE;
    }
  g_autoptr (GVariant) state = g_variant_get_child_value (reply, 0);
  apply_state (self, state);
  return TRUE;
}

/**
 * la_environment_stop_updates:
 * @self: the environment
 *
 * Ends la_environment_start_updates() (UnsubscribeEnvironment; Apple's
 * `removeObserver(_:)`).
 */
void
la_environment_stop_updates (LaEnvironment *self)
{
  g_return_if_fail (LA_IS_ENVIRONMENT (self));
  if (self->updates_proxy == NULL)
    return;
  g_signal_handler_disconnect (self->updates_proxy, self->updates_handler);
  g_dbus_proxy_call (G_DBUS_PROXY (self->updates_proxy), "UnsubscribeEnvironment", NULL, G_DBUS_CALL_FLAGS_NONE, -1,
                     NULL, NULL, NULL);
  g_clear_object (&self->updates_proxy);
}

LaBiometryType
la_environment_get_biometry_type (LaEnvironment *self)
{
  return self->biometry_type;
}

gboolean
la_environment_get_biometry_enrolled (LaEnvironment *self)
{
  return self->biometry_enrolled;
}

gboolean
la_environment_get_biometry_locked_out (LaEnvironment *self)
{
  return self->biometry_locked_out;
}

gboolean
la_environment_get_biometry_usable (LaEnvironment *self)
{
  return self->biometry_usable;
}

gboolean
la_environment_get_built_in_sensor_inaccessible (LaEnvironment *self)
{
  return self->built_in_sensor_inaccessible;
}

gboolean
la_environment_get_password_set (LaEnvironment *self)
{
  return self->password_set;
}

/**
 * la_environment_get_biometry_state_hash:
 * @self: the environment
 *
 * Returns: (transfer none) (nullable): the enrolled set's hash for this app
 */
GBytes *
la_environment_get_biometry_state_hash (LaEnvironment *self)
{
  return self->biometry_state_hash;
}
