/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#if !defined(LOCALAUTH_INSIDE) && !defined(LOCALAUTH_COMPILATION)
#error "Only <localauth.h> can be included directly."
#endif

#include <gio/gio.h>
#include "la-error.h"
#include "la-context.h"

G_BEGIN_DECLS

#define LA_TYPE_ENVIRONMENT (la_environment_get_type ())
LA_AVAILABLE
G_DECLARE_FINAL_TYPE (LaEnvironment, la_environment, LA, ENVIRONMENT, GObject)

LA_AVAILABLE
LaEnvironment *la_environment_get_current_user (void);
LA_AVAILABLE
gboolean la_environment_refresh (LaEnvironment *self, GError **error);
LA_AVAILABLE
gboolean la_environment_start_updates (LaEnvironment *self, GError **error);
LA_AVAILABLE
void la_environment_stop_updates (LaEnvironment *self);

LA_AVAILABLE
LaBiometryType la_environment_get_biometry_type (LaEnvironment *self);
LA_AVAILABLE
gboolean la_environment_get_biometry_enrolled (LaEnvironment *self);
LA_AVAILABLE
gboolean la_environment_get_biometry_locked_out (LaEnvironment *self);
LA_AVAILABLE
gboolean la_environment_get_biometry_usable (LaEnvironment *self);
LA_AVAILABLE
gboolean la_environment_get_built_in_sensor_inaccessible (LaEnvironment *self);
LA_AVAILABLE
gboolean la_environment_get_password_set (LaEnvironment *self);
LA_AVAILABLE
GBytes *la_environment_get_biometry_state_hash (LaEnvironment *self);

G_END_DECLS
