/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#if !defined(LOCALAUTH_INSIDE) && !defined(LOCALAUTH_COMPILATION)
#error "Only <localauth.h> can be included directly."
#endif

#include <gio/gio.h>
#include "la-error.h"

G_BEGIN_DECLS

/**
 * LaPolicy:
 * @LA_POLICY_DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS: the fingerprint only (1)
 * @LA_POLICY_DEVICE_OWNER_AUTHENTICATION: the fingerprint or the account password (2)
 *
 * Apple's `LAPolicy`.
 */
typedef enum {
  LA_POLICY_DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS = 1, /*< nick=device-owner-authentication-with-biometrics >*/
  LA_POLICY_DEVICE_OWNER_AUTHENTICATION = 2 /*< nick=device-owner-authentication >*/
} LaPolicy;

/**
 * LaBiometryType:
 * @LA_BIOMETRY_TYPE_NONE: no reader
 * @LA_BIOMETRY_TYPE_TOUCH_ID: a fingerprint reader
 * @LA_BIOMETRY_TYPE_FACE_ID: Apple's face recognition (never on Linux)
 * @LA_BIOMETRY_TYPE_OPTIC_ID: Apple's iris recognition (never on Linux)
 *
 * Apple's `LABiometryType`.
 */
typedef enum {
  LA_BIOMETRY_TYPE_NONE = 0,
  LA_BIOMETRY_TYPE_TOUCH_ID = 1,
  LA_BIOMETRY_TYPE_FACE_ID = 2,
  LA_BIOMETRY_TYPE_OPTIC_ID = 4
} LaBiometryType;

/**
 * LA_TOUCH_ID_AUTHENTICATION_MAXIMUM_ALLOWABLE_REUSE_DURATION:
 *
 * Apple's `LATouchIDAuthenticationMaximumAllowableReuseDuration`, in seconds.
 */
#define LA_TOUCH_ID_AUTHENTICATION_MAXIMUM_ALLOWABLE_REUSE_DURATION 300.0

#define LA_TYPE_CONTEXT (la_context_get_type ())
LA_AVAILABLE
G_DECLARE_FINAL_TYPE (LaContext, la_context, LA, CONTEXT, GObject)

LA_AVAILABLE
LaContext *la_context_new (void);

LA_AVAILABLE
gboolean la_context_can_evaluate_policy (LaContext *self, LaPolicy policy, GError **error);

LA_AVAILABLE
void la_context_evaluate_policy (LaContext *self, LaPolicy policy, const gchar *localized_reason,
                                 GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data);
LA_AVAILABLE
gboolean la_context_evaluate_policy_finish (LaContext *self, GAsyncResult *result, GError **error);

LA_AVAILABLE
void la_context_invalidate (LaContext *self);
LA_AVAILABLE
void la_context_end_evaluation (LaContext *self, LaError code);

LA_AVAILABLE
LaBiometryType la_context_get_biometry_type (LaContext *self);
LA_AVAILABLE
GBytes *la_context_get_evaluated_policy_domain_state (LaContext *self);

LA_AVAILABLE
const gchar *la_context_get_localized_reason (LaContext *self);
LA_AVAILABLE
void la_context_set_localized_reason (LaContext *self, const gchar *reason);
LA_AVAILABLE
const gchar *la_context_get_localized_fallback_title (LaContext *self);
LA_AVAILABLE
void la_context_set_localized_fallback_title (LaContext *self, const gchar *title);
LA_AVAILABLE
const gchar *la_context_get_localized_cancel_title (LaContext *self);
LA_AVAILABLE
void la_context_set_localized_cancel_title (LaContext *self, const gchar *title);
LA_AVAILABLE
gdouble la_context_get_touch_id_authentication_allowable_reuse_duration (LaContext *self);
LA_AVAILABLE
void la_context_set_touch_id_authentication_allowable_reuse_duration (LaContext *self, gdouble seconds);
LA_AVAILABLE
gboolean la_context_get_interaction_not_allowed (LaContext *self);
LA_AVAILABLE
void la_context_set_interaction_not_allowed (LaContext *self, gboolean not_allowed);

G_END_DECLS
