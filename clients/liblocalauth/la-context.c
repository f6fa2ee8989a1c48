/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* LaContext: Apple's LAContext over org.example.LocalAuth. Behaviour follows
 * the Swift library (Sources/LocalAuthentication/LAContext.swift): each
 * evaluation is named by a fresh request id, which its status signals carry
 * and which Cancel and EndEvaluation name. */
#include "la-private.h"

/**
 * LaContext:
 *
 * A context for authenticating the person at this machine as its owner
 * (Apple's `LAContext`). Make one per authentication flow.
 */
struct _LaContext {
  GObject parent_instance;

  LaBiometryType biometry_type;
  gchar *localized_reason;
  gchar *localized_fallback_title;
  gchar *localized_cancel_title;
  gdouble reuse_duration;
  gboolean interaction_not_allowed;
  gboolean invalidated;

  /* After a successful preflight; read from the service when first asked. */
  gboolean domain_state_due;
  GBytes *domain_state;

  /* request id -> the GTask of that evaluation */
  GHashTable *pending;
  LaDBusLocalAuth *status_proxy;
  gulong status_handler;
};

G_DEFINE_FINAL_TYPE (LaContext, la_context, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_BIOMETRY_TYPE,
  PROP_LOCALIZED_REASON,
  PROP_LOCALIZED_FALLBACK_TITLE,
  PROP_LOCALIZED_CANCEL_TITLE,
  PROP_TOUCH_ID_AUTHENTICATION_ALLOWABLE_REUSE_DURATION,
  PROP_INTERACTION_NOT_ALLOWED,
  PROP_EVALUATED_POLICY_DOMAIN_STATE,
  N_PROPS
};
static GParamSpec *properties[N_PROPS];

enum { SIGNAL_STATUS, N_SIGNALS };
static guint signals[N_SIGNALS];

static void
la_context_dispose (GObject *object)
{
  LaContext *self = LA_CONTEXT (object);
  if (self->status_proxy != NULL)
    {
      g_signal_handler_disconnect (self->status_proxy, self->status_handler);
      g_clear_object (&self->status_proxy);
    }
  G_OBJECT_CLASS (la_context_parent_class)->dispose (object);
}

static void
la_context_finalize (GObject *object)
{
  LaContext *self = LA_CONTEXT (object);
  g_free (self->localized_reason);
  g_free (self->localized_fallback_title);
  g_free (self->localized_cancel_title);
  g_clear_pointer (&self->domain_state, g_bytes_unref);
  g_hash_table_unref (self->pending);
  G_OBJECT_CLASS (la_context_parent_class)->finalize (object);
}

static void
la_context_get_property (GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
  LaContext *self = LA_CONTEXT (object);
  switch (id)
    {
    case PROP_BIOMETRY_TYPE:
      g_value_set_enum (value, self->biometry_type);
      break;
    case PROP_LOCALIZED_REASON:
      g_value_set_string (value, self->localized_reason);
      break;
    case PROP_LOCALIZED_FALLBACK_TITLE:
      g_value_set_string (value, self->localized_fallback_title);
      break;
    case PROP_LOCALIZED_CANCEL_TITLE:
      g_value_set_string (value, self->localized_cancel_title);
      break;
    case PROP_TOUCH_ID_AUTHENTICATION_ALLOWABLE_REUSE_DURATION:
      g_value_set_double (value, self->reuse_duration);
      break;
    case PROP_INTERACTION_NOT_ALLOWED:
      g_value_set_boolean (value, self->interaction_not_allowed);
      break;
    case PROP_EVALUATED_POLICY_DOMAIN_STATE:
      g_value_set_boxed (value, la_context_get_evaluated_policy_domain_state (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
    }
}

static void
la_context_set_property (GObject *object, guint id, const GValue *value, GParamSpec *pspec)
{
  LaContext *self = LA_CONTEXT (object);
  switch (id)
    {
    case PROP_LOCALIZED_REASON:
      la_context_set_localized_reason (self, g_value_get_string (value));
      break;
    case PROP_LOCALIZED_FALLBACK_TITLE:
      la_context_set_localized_fallback_title (self, g_value_get_string (value));
      break;
    case PROP_LOCALIZED_CANCEL_TITLE:
      la_context_set_localized_cancel_title (self, g_value_get_string (value));
      break;
    case PROP_TOUCH_ID_AUTHENTICATION_ALLOWABLE_REUSE_DURATION:
      la_context_set_touch_id_authentication_allowable_reuse_duration (self, g_value_get_double (value));
      break;
    case PROP_INTERACTION_NOT_ALLOWED:
      la_context_set_interaction_not_allowed (self, g_value_get_boolean (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
    }
}

static void
la_context_class_init (LaContextClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  object_class->dispose = la_context_dispose;
  object_class->finalize = la_context_finalize;
  object_class->get_property = la_context_get_property;
  object_class->set_property = la_context_set_property;

  /**
   * LaContext:biometry-type:
   *
   * The biometry this machine has; known after la_context_can_evaluate_policy().
   */
  properties[PROP_BIOMETRY_TYPE] =
    g_param_spec_enum ("biometry-type", NULL, NULL, LA_TYPE_BIOMETRY_TYPE, LA_BIOMETRY_TYPE_NONE,
                       G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /**
   * LaContext:localized-reason:
   *
   * Apple's `localizedReason` property: kept for code written for Apple's
   * framework; la_context_evaluate_policy() sends its own argument.
   */
  properties[PROP_LOCALIZED_REASON] =
    g_param_spec_string ("localized-reason", NULL, NULL, "",
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /**
   * LaContext:localized-fallback-title:
   *
   * The fallback button's title: %NULL for the default, empty for none.
   */
  properties[PROP_LOCALIZED_FALLBACK_TITLE] =
    g_param_spec_string ("localized-fallback-title", NULL, NULL, NULL,
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /**
   * LaContext:localized-cancel-title:
   *
   * The cancel button's title: %NULL for the default.
   */
  properties[PROP_LOCALIZED_CANCEL_TITLE] =
    g_param_spec_string ("localized-cancel-title", NULL, NULL, NULL,
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /**
   * LaContext:touch-id-authentication-allowable-reuse-duration:
   *
   * Seconds within which the user's last fingerprint match is accepted again
   * without a scan (at most
   * %LA_TOUCH_ID_AUTHENTICATION_MAXIMUM_ALLOWABLE_REUSE_DURATION).
   */
  properties[PROP_TOUCH_ID_AUTHENTICATION_ALLOWABLE_REUSE_DURATION] =
    g_param_spec_double ("touch-id-authentication-allowable-reuse-duration", NULL, NULL, 0,
                         LA_TOUCH_ID_AUTHENTICATION_MAXIMUM_ALLOWABLE_REUSE_DURATION, 0,
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /**
   * LaContext:interaction-not-allowed:
   *
   * When %TRUE, an evaluation that would wait for the person fails with
   * %LA_ERROR_NOT_INTERACTIVE.
   */
  properties[PROP_INTERACTION_NOT_ALLOWED] =
    g_param_spec_boolean ("interaction-not-allowed", NULL, NULL, FALSE,
                          G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /**
   * LaContext:evaluated-policy-domain-state:
   *
   * Apple's `evaluatedPolicyDomainState`: opaque bytes that change when the
   * enrolled fingerprints change; %NULL until a preflight succeeded.
   */
  properties[PROP_EVALUATED_POLICY_DOMAIN_STATE] =
    g_param_spec_boxed ("evaluated-policy-domain-state", NULL, NULL, G_TYPE_BYTES,
                        G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /**
   * LaContext::status:
   * @self: the context
   * @status: the service's EvaluationStatus: place-finger, retry-scan,
   *   swipe-too-short, finger-not-centered, remove-and-retry, too-fast or
   *   no-match
   *
   * Progress of this context's evaluation, for the app's own prompt
   * ("place your finger", "try again"). Emitted in the main context of the
   * thread that first used the library.
   */
  signals[SIGNAL_STATUS] = g_signal_new ("status", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                         NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void
la_context_init (LaContext *self)
{
  self->localized_reason = g_strdup ("");
  self->pending = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
}

/**
 * la_context_new:
 *
 * Returns: (transfer full): a new context
 */
LaContext *
la_context_new (void)
{
  return g_object_new (LA_TYPE_CONTEXT, NULL);
}

static gboolean
check_usable (LaContext *self, LaPolicy policy, GError **error)
{
  if (self->invalidated)
    {
      g_propagate_error (error, la_client_new_error (LA_ERROR_INVALID_CONTEXT, NULL, "The context was invalidated."));
      return FALSE;
    }
  if (policy != LA_POLICY_DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS && policy != LA_POLICY_DEVICE_OWNER_AUTHENTICATION)
    {
      g_propagate_error (error, la_client_new_error (LA_ERROR_WATCH_NOT_AVAILABLE, NULL, "Unknown policy."));
      return FALSE;
    }
  return TRUE;
}

static void
update_biometry_type (LaContext *self, LaDBusLocalAuth *proxy)
{
  /* GDBusProxy keeps BiometryType (GetAll when it was made, then the
   * service's PropertiesChanged): no call for it. Only when the cache is
   * empty (the service was not running when the proxy was made) is it asked. */
  g_autoptr (GVariant) value = g_dbus_proxy_get_cached_property (G_DBUS_PROXY (proxy), "BiometryType");
  guint32 raw = 0;
  if (value != NULL)
    raw = g_variant_get_uint32 (value);
  else
    {
      g_autoptr (GVariant) reply = g_dbus_proxy_call_sync (
        G_DBUS_PROXY (proxy), "org.freedesktop.DBus.Properties.Get",
        g_variant_new ("(ss)", LA_INTERFACE, "BiometryType"), G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL);
      if (reply != NULL)
        {
          g_autoptr (GVariant) boxed = NULL;
          g_variant_get (reply, "(v)", &boxed);
          if (g_variant_is_of_type (boxed, G_VARIANT_TYPE_UINT32))
            raw = g_variant_get_uint32 (boxed);
        }
    }
  LaBiometryType type = raw == 1 || raw == 2 || raw == 4 ? (LaBiometryType) raw : LA_BIOMETRY_TYPE_NONE;
  if (type != self->biometry_type)
    {
      self->biometry_type = type;
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_BIOMETRY_TYPE]);
    }
}

/**
 * la_context_can_evaluate_policy:
 * @self: a context
 * @policy: the policy
 * @error: why it cannot, as an %LA_ERROR
 *
 * Apple's `canEvaluatePolicy(_:error:)`: whether @policy can be evaluated
 * now. One call to the service (CanEvaluatePolicy).
 *
 * Returns: %TRUE if it can
 */
gboolean
la_context_can_evaluate_policy (LaContext *self, LaPolicy policy, GError **error)
{
  g_return_val_if_fail (LA_IS_CONTEXT (self), FALSE);
  if (!check_usable (self, policy, error))
    return FALSE;
  g_autoptr (LaDBusLocalAuth) proxy = la_client_get_proxy (error);
  if (proxy == NULL)
    return FALSE;
  gboolean can = FALSE;
  GError *failure = NULL;
  gboolean answered = la_dbus_local_auth_call_can_evaluate_policy_sync (proxy, policy, &can, NULL, &failure);
  update_biometry_type (self, proxy);
  if (!answered)
    {
      la_client_map_error (&failure);
      g_propagate_error (error, failure);
      return FALSE;
    }
  if (can)
    {
      /* Apple sets the domain state after a successful preflight; it is read
       * from the service only if the app asks for it. */
      self->domain_state_due = TRUE;
      g_clear_pointer (&self->domain_state, g_bytes_unref);
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_EVALUATED_POLICY_DOMAIN_STATE]);
    }
  return can;
}

/**
 * la_context_get_evaluated_policy_domain_state:
 * @self: a context
 *
 * Apple's `evaluatedPolicyDomainState`.
 *
 * Returns: (transfer none) (nullable): the bytes, or %NULL before a
 *   successful preflight (or when the service cannot say)
 */
GBytes *
la_context_get_evaluated_policy_domain_state (LaContext *self)
{
  g_return_val_if_fail (LA_IS_CONTEXT (self), NULL);
  if (self->domain_state_due && self->domain_state == NULL)
    {
      g_autoptr (GVariant) reply = la_client_call_sync ("GetDomainState", NULL, NULL);
      if (reply != NULL)
        {
          g_autoptr (GVariant) bytes = g_variant_get_child_value (reply, 0);
          self->domain_state = g_variant_get_data_as_bytes (bytes);
        }
    }
  return self->domain_state;
}

LaBiometryType
la_context_get_biometry_type (LaContext *self)
{
  g_return_val_if_fail (LA_IS_CONTEXT (self), LA_BIOMETRY_TYPE_NONE);
  return self->biometry_type;
}

/* ---- Evaluation ---- */

typedef struct {
  LaContext *context; /* the task's source object holds it */
  gchar *request_id;
  GCancellable *cancellable;
  gulong cancelled_handler;
} Evaluation;

static void
evaluation_free (Evaluation *evaluation)
{
  g_free (evaluation->request_id);
  g_clear_object (&evaluation->cancellable);
  g_free (evaluation);
}

static void
send_to_service (const gchar *method, GVariant *parameters)
{
  /* Fire and forget: Cancel and EndEvaluation answer nothing useful, and
   * the evaluation's own reply says how it ended. */
  g_autoptr (LaDBusLocalAuth) proxy = la_client_get_proxy (NULL);
  if (proxy != NULL)
    g_dbus_proxy_call (G_DBUS_PROXY (proxy), method, parameters, G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL, NULL);
  else
    g_variant_unref (g_variant_ref_sink (parameters));
}

static void
on_cancelled (GCancellable *cancellable, gpointer data)
{
  /* Runs in the thread that cancels; the service answers the evaluation
   * with AppCancel, which is what the app's callback gets. */
  const gchar *request_id = data;
  send_to_service ("Cancel", g_variant_new ("(s)", request_id));
}

static void
on_status (GVariant *parameters, gpointer data)
{
  LaContext *self = data;
  const gchar *request_id = NULL, *status = NULL;
  if (!g_variant_is_of_type (parameters, G_VARIANT_TYPE ("(ss)")))
    return;
  g_variant_get (parameters, "(&s&s)", &request_id, &status);
  if (g_hash_table_contains (self->pending, request_id))
    g_signal_emit (self, signals[SIGNAL_STATUS], 0, status);
}

static void
evaluation_done (GObject *source, GAsyncResult *result, gpointer data)
{
  GTask *task = data;
  Evaluation *evaluation = g_task_get_task_data (task);
  GError *error = NULL;
  g_autoptr (GVariant) reply = g_dbus_proxy_call_finish (G_DBUS_PROXY (source), result, &error);
  g_hash_table_remove (evaluation->context->pending, evaluation->request_id);
  if (evaluation->cancelled_handler != 0)
    g_cancellable_disconnect (evaluation->cancellable, evaluation->cancelled_handler);
  evaluation->cancelled_handler = 0;
  if (reply == NULL)
    {
      la_client_map_error (&error);
      g_task_return_error (task, error);
    }
  else
    {
      gboolean success = FALSE;
      g_variant_get (reply, "(b)", &success);
      g_task_return_boolean (task, success);
    }
  g_object_unref (task);
}

static GVariant *
evaluation_options (LaContext *self, const gchar *request_id)
{
  GVariantBuilder builder;
  g_variant_builder_init (&builder, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&builder, "{sv}", "request-id", g_variant_new_string (request_id));
  if (self->reuse_duration > 0)
    g_variant_builder_add (&builder, "{sv}", "reuse-duration", g_variant_new_double (self->reuse_duration));
  if (self->interaction_not_allowed)
    g_variant_builder_add (&builder, "{sv}", "interaction-not-allowed", g_variant_new_boolean (TRUE));
  if (self->localized_fallback_title != NULL)
    g_variant_builder_add (&builder, "{sv}", "fallback-title", g_variant_new_string (self->localized_fallback_title));
  if (self->localized_cancel_title != NULL)
    g_variant_builder_add (&builder, "{sv}", "cancel-title", g_variant_new_string (self->localized_cancel_title));
  return g_variant_builder_end (&builder);
}

/**
 * la_context_evaluate_policy:
 * @self: a context
 * @policy: the policy
 * @localized_reason: why the app asks (shown in the password dialog of
 *   policy 2 after the program's name)
 * @cancellable: (nullable): cancelling it sends the service Cancel for this
 *   evaluation, which then fails with %LA_ERROR_APP_CANCEL
 * @callback: (scope async): called when the person is verified or it failed
 * @user_data: for @callback
 *
 * Apple's `evaluatePolicy(_:localizedReason:reply:)`. No reply timeout: it
 * takes as long as the person takes (the service bounds it). Progress comes
 * as #LaContext::status.
 */
void
la_context_evaluate_policy (LaContext *self, LaPolicy policy, const gchar *localized_reason,
                            GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (LA_IS_CONTEXT (self));
  g_return_if_fail (localized_reason != NULL);
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, la_context_evaluate_policy);
  /* The result is the service's answer, AppCancel included: GTask must not
   * replace it by G_IO_ERROR_CANCELLED. */
  g_task_set_check_cancellable (task, FALSE);
  GError *error = NULL;
  if (!check_usable (self, policy, &error))
    {
      g_task_return_error (task, error);
      g_object_unref (task);
      return;
    }
  if (g_cancellable_is_cancelled (cancellable))
    {
      g_task_return_error (task, la_client_new_error (LA_ERROR_APP_CANCEL, NULL, "Cancelled before it started."));
      g_object_unref (task);
      return;
    }
  g_autoptr (LaDBusLocalAuth) proxy = la_client_get_proxy (&error);
  if (proxy == NULL)
    {
      g_task_return_error (task, error);
      g_object_unref (task);
      return;
    }
  if (self->status_proxy == NULL)
    {
      self->status_proxy = g_object_ref (proxy);
      self->status_handler = la_client_connect_signal (proxy, "EvaluationStatus", on_status, self);
    }

  Evaluation *evaluation = g_new0 (Evaluation, 1);
  evaluation->context = self;
  evaluation->request_id = g_uuid_string_random ();
  g_task_set_task_data (task, evaluation, (GDestroyNotify) evaluation_free);
  g_hash_table_insert (self->pending, g_strdup (evaluation->request_id), task);

  g_dbus_proxy_call (G_DBUS_PROXY (proxy), "EvaluatePolicy",
                     g_variant_new ("(us@a{sv})", (guint32) policy, localized_reason,
                                    evaluation_options (self, evaluation->request_id)),
                     G_DBUS_CALL_FLAGS_NONE, LA_NO_TIMEOUT, NULL, evaluation_done, task);
  /* After the call is queued, so that Cancel follows it on the connection. */
  if (cancellable != NULL)
    {
      evaluation->cancellable = g_object_ref (cancellable);
      evaluation->cancelled_handler = g_cancellable_connect (cancellable, G_CALLBACK (on_cancelled),
                                                             g_strdup (evaluation->request_id), g_free);
    }
}

/**
 * la_context_evaluate_policy_finish:
 * @self: a context
 * @result: the result given to the callback
 * @error: how it failed, as an %LA_ERROR
 *
 * Returns: %TRUE once the person was verified as this user
 */
gboolean
la_context_evaluate_policy_finish (LaContext *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}

static void
end_pending (LaContext *self, const gchar *method, const gchar *reason)
{
  GHashTableIter iter;
  gpointer request_id;
  g_hash_table_iter_init (&iter, self->pending);
  while (g_hash_table_iter_next (&iter, &request_id, NULL))
    send_to_service (method, reason ? g_variant_new ("(ss)", request_id, reason) : g_variant_new ("(s)", request_id));
}

/**
 * la_context_invalidate:
 * @self: a context
 *
 * Apple's `invalidate()`: cancels this context's pending evaluations (they
 * fail with %LA_ERROR_APP_CANCEL); afterwards every call fails with
 * %LA_ERROR_INVALID_CONTEXT.
 */
void
la_context_invalidate (LaContext *self)
{
  g_return_if_fail (LA_IS_CONTEXT (self));
  self->invalidated = TRUE;
  end_pending (self, "Cancel", NULL);
}

/**
 * la_context_end_evaluation:
 * @self: a context
 * @code: %LA_ERROR_USER_CANCEL (the app's cancel button),
 *   %LA_ERROR_USER_FALLBACK (its fallback button) or %LA_ERROR_APP_CANCEL
 *
 * Ends this context's pending evaluations as the person chose in the app's
 * own prompt (the service's EndEvaluation); they fail with @code. A Linux
 * addition: Apple's system sheet has these buttons itself.
 */
void
la_context_end_evaluation (LaContext *self, LaError code)
{
  g_return_if_fail (LA_IS_CONTEXT (self));
  const gchar *reason = code == LA_ERROR_USER_CANCEL     ? "user-cancel"
                        : code == LA_ERROR_USER_FALLBACK ? "user-fallback"
                                                         : "app-cancel";
  end_pending (self, "EndEvaluation", reason);
}

/* ---- Properties ---- */

static void
set_string (LaContext *self, gchar **field, const gchar *value, guint property)
{
  if (g_strcmp0 (*field, value) == 0)
    return;
  g_free (*field);
  *field = g_strdup (value);
  g_object_notify_by_pspec (G_OBJECT (self), properties[property]);
}

const gchar *
la_context_get_localized_reason (LaContext *self)
{
  g_return_val_if_fail (LA_IS_CONTEXT (self), NULL);
  return self->localized_reason;
}

void
la_context_set_localized_reason (LaContext *self, const gchar *reason)
{
  g_return_if_fail (LA_IS_CONTEXT (self));
  set_string (self, &self->localized_reason, reason ? reason : "", PROP_LOCALIZED_REASON);
}

/**
 * la_context_get_localized_fallback_title:
 * @self: a context
 *
 * Returns: (nullable): the fallback button's title
 */
const gchar *
la_context_get_localized_fallback_title (LaContext *self)
{
  g_return_val_if_fail (LA_IS_CONTEXT (self), NULL);
  return self->localized_fallback_title;
}

/**
 * la_context_set_localized_fallback_title:
 * @self: a context
 * @title: (nullable): the title; %NULL for the default, empty for none
 */
void
la_context_set_localized_fallback_title (LaContext *self, const gchar *title)
{
  g_return_if_fail (LA_IS_CONTEXT (self));
  set_string (self, &self->localized_fallback_title, title, PROP_LOCALIZED_FALLBACK_TITLE);
}

/**
 * la_context_get_localized_cancel_title:
 * @self: a context
 *
 * Returns: (nullable): the cancel button's title
 */
const gchar *
la_context_get_localized_cancel_title (LaContext *self)
{
  g_return_val_if_fail (LA_IS_CONTEXT (self), NULL);
  return self->localized_cancel_title;
}

/**
 * la_context_set_localized_cancel_title:
 * @self: a context
 * @title: (nullable): the title; %NULL for the default
 */
void
la_context_set_localized_cancel_title (LaContext *self, const gchar *title)
{
  g_return_if_fail (LA_IS_CONTEXT (self));
  set_string (self, &self->localized_cancel_title, title, PROP_LOCALIZED_CANCEL_TITLE);
}

gdouble
la_context_get_touch_id_authentication_allowable_reuse_duration (LaContext *self)
{
  g_return_val_if_fail (LA_IS_CONTEXT (self), 0);
  return self->reuse_duration;
}

void
la_context_set_touch_id_authentication_allowable_reuse_duration (LaContext *self, gdouble seconds)
{
  g_return_if_fail (LA_IS_CONTEXT (self));
  /* Apple clamps rather than refuses. */
  seconds = CLAMP (seconds, 0, LA_TOUCH_ID_AUTHENTICATION_MAXIMUM_ALLOWABLE_REUSE_DURATION);
  if (seconds == self->reuse_duration)
    return;
  self->reuse_duration = seconds;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_TOUCH_ID_AUTHENTICATION_ALLOWABLE_REUSE_DURATION]);
}

gboolean
la_context_get_interaction_not_allowed (LaContext *self)
{
  g_return_val_if_fail (LA_IS_CONTEXT (self), FALSE);
  return self->interaction_not_allowed;
}

void
la_context_set_interaction_not_allowed (LaContext *self, gboolean not_allowed)
{
  g_return_if_fail (LA_IS_CONTEXT (self));
  not_allowed = !!not_allowed;
  if (not_allowed == self->interaction_not_allowed)
    return;
  self->interaction_not_allowed = not_allowed;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_INTERACTION_NOT_ALLOWED]);
}
