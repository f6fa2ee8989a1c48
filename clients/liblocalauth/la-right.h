/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#if !defined(LOCALAUTH_INSIDE) && !defined(LOCALAUTH_COMPILATION)
#error "Only <localauth.h> can be included directly."
#endif

#include <gio/gio.h>
#include "la-error.h"

G_BEGIN_DECLS

/**
 * LaRightRequirement:
 * @LA_RIGHT_REQUIREMENT_DEFAULT: a fingerprint or the account password (`.default`)
 * @LA_RIGHT_REQUIREMENT_BIOMETRY: a fingerprint (`.biometry`)
 * @LA_RIGHT_REQUIREMENT_BIOMETRY_CURRENT_SET: a fingerprint of the set enrolled
 *   when the right was saved; once the set changes the right is dead (`.biometryCurrentSet`)
 * @LA_RIGHT_REQUIREMENT_BIOMETRY_OR_PASSWORD: a fingerprint, with the account
 *   password as fallback (`.biometry(fallback: .devicePasscode)`)
 *
 * Apple's `LAAuthenticationRequirement`.
 */
typedef enum {
  LA_RIGHT_REQUIREMENT_DEFAULT,
  LA_RIGHT_REQUIREMENT_BIOMETRY,
  LA_RIGHT_REQUIREMENT_BIOMETRY_CURRENT_SET,
  LA_RIGHT_REQUIREMENT_BIOMETRY_OR_PASSWORD
} LaRightRequirement;

/**
 * LaRightState:
 * @LA_RIGHT_STATE_UNKNOWN: not authorized yet
 * @LA_RIGHT_STATE_AUTHORIZING: an authorization is under way
 * @LA_RIGHT_STATE_AUTHORIZED: authorized: its secret can be loaded
 * @LA_RIGHT_STATE_NOT_AUTHORIZED: the authorization failed or ended
 *
 * Apple's `LARight.State`.
 */
typedef enum {
  LA_RIGHT_STATE_UNKNOWN,
  LA_RIGHT_STATE_AUTHORIZING,
  LA_RIGHT_STATE_AUTHORIZED,
  LA_RIGHT_STATE_NOT_AUTHORIZED
} LaRightState;

#define LA_TYPE_SECRET (la_secret_get_type ())
LA_AVAILABLE
G_DECLARE_FINAL_TYPE (LaSecret, la_secret, LA, SECRET, GObject)

#define LA_TYPE_RIGHT (la_right_get_type ())
LA_AVAILABLE
G_DECLARE_FINAL_TYPE (LaRight, la_right, LA, RIGHT, GObject)

#define LA_TYPE_RIGHT_STORE (la_right_store_get_type ())
LA_AVAILABLE
G_DECLARE_FINAL_TYPE (LaRightStore, la_right_store, LA, RIGHT_STORE, GObject)

LA_AVAILABLE
LaRight *la_right_new (LaRightRequirement requirement);
LA_AVAILABLE
LaRightRequirement la_right_get_requirement (LaRight *self);
LA_AVAILABLE
LaRightState la_right_get_state (LaRight *self);
LA_AVAILABLE
const gchar *la_right_get_identifier (LaRight *self);
LA_AVAILABLE
LaSecret *la_right_get_secret (LaRight *self);
LA_AVAILABLE
GBytes *la_right_get_public_key (LaRight *self);
typedef struct _LaPrivateKey LaPrivateKey;
LA_AVAILABLE
LaPrivateKey *la_right_get_key (LaRight *self);
LA_AVAILABLE
void la_right_authorize (LaRight *self, const gchar *localized_reason, GCancellable *cancellable,
                         GAsyncReadyCallback callback, gpointer user_data);
LA_AVAILABLE
gboolean la_right_authorize_finish (LaRight *self, GAsyncResult *result, GError **error);
LA_AVAILABLE
gboolean la_right_check_can_authorize (LaRight *self, GError **error);
LA_AVAILABLE
void la_right_deauthorize (LaRight *self);

LA_AVAILABLE
void la_secret_load_data (LaSecret *self, GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data);
LA_AVAILABLE
GBytes *la_secret_load_data_finish (LaSecret *self, GAsyncResult *result, GError **error);

LA_AVAILABLE
LaRightStore *la_right_store_get_default (void);
LA_AVAILABLE
const gchar *la_right_store_get_app_id (LaRightStore *self);
LA_AVAILABLE
void la_right_store_save_right (LaRightStore *self, LaRight *right, const gchar *identifier, GBytes *secret,
                                GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data);
LA_AVAILABLE
LaRight *la_right_store_save_right_finish (LaRightStore *self, GAsyncResult *result, GError **error);
LA_AVAILABLE
void la_right_store_right_for_identifier (LaRightStore *self, const gchar *identifier, GCancellable *cancellable,
                                          GAsyncReadyCallback callback, gpointer user_data);
LA_AVAILABLE
LaRight *la_right_store_right_for_identifier_finish (LaRightStore *self, GAsyncResult *result, GError **error);
LA_AVAILABLE
void la_right_store_remove_right_for_identifier (LaRightStore *self, const gchar *identifier, GCancellable *cancellable,
                                                 GAsyncReadyCallback callback, gpointer user_data);
LA_AVAILABLE
gboolean la_right_store_remove_right_for_identifier_finish (LaRightStore *self, GAsyncResult *result, GError **error);
LA_AVAILABLE
void la_right_store_remove_all_rights (LaRightStore *self, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data);
LA_AVAILABLE
gboolean la_right_store_remove_all_rights_finish (LaRightStore *self, GAsyncResult *result, GError **error);

G_END_DECLS
