/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#if !defined(LOCALAUTH_INSIDE) && !defined(LOCALAUTH_COMPILATION)
#error "Only <localauth.h> can be included directly."
#endif

#include <glib.h>

G_BEGIN_DECLS

#define LA_AVAILABLE __attribute__((visibility("default")))

/**
 * LA_ERROR:
 *
 * The one error domain of the library: every failure, whether the service,
 * the bus or the library found it, is an error of this domain whose code is
 * Apple's `LAError.Code` raw value.
 */
#define LA_ERROR (la_error_quark ())

/**
 * LaError:
 * @LA_ERROR_AUTHENTICATION_FAILED: the person at the reader is not the user (-1)
 * @LA_ERROR_USER_CANCEL: the person cancelled (-2)
 * @LA_ERROR_USER_FALLBACK: the person chose the app's fallback (-3)
 * @LA_ERROR_SYSTEM_CANCEL: the system ended it: a timeout, the reader gone, the service stopping (-4)
 * @LA_ERROR_PASSCODE_NOT_SET: no fingerprint and no password to offer (-5)
 * @LA_ERROR_BIOMETRY_NOT_AVAILABLE: no reader, no service, not at the reader, or polkit said no (-6)
 * @LA_ERROR_BIOMETRY_NOT_ENROLLED: no fingerprint enrolled (-7)
 * @LA_ERROR_BIOMETRY_LOCKOUT: too many failed matches, or the password is required first (-8)
 * @LA_ERROR_APP_CANCEL: the app cancelled (a #GCancellable, la_context_invalidate()) (-9)
 * @LA_ERROR_INVALID_CONTEXT: the context was invalidated, or a bad argument (-10)
 * @LA_ERROR_WATCH_NOT_AVAILABLE: Apple's code for an unknown policy (-11)
 * @LA_ERROR_NOT_INTERACTIVE: interaction was not allowed, or a right is not authorized (-1004)
 *
 * Apple's `LAError.Code`, with Apple's raw values. Errors of the service
 * that are not LAError codes are mapped as the Swift library maps them; the
 * D-Bus error name stays available through la_error_get_dbus_error_name().
 */
typedef enum {
  LA_ERROR_AUTHENTICATION_FAILED = -1,
  LA_ERROR_USER_CANCEL = -2,
  LA_ERROR_USER_FALLBACK = -3,
  LA_ERROR_SYSTEM_CANCEL = -4,
  LA_ERROR_PASSCODE_NOT_SET = -5,
  LA_ERROR_BIOMETRY_NOT_AVAILABLE = -6,
  LA_ERROR_BIOMETRY_NOT_ENROLLED = -7,
  LA_ERROR_BIOMETRY_LOCKOUT = -8,
  LA_ERROR_APP_CANCEL = -9,
  LA_ERROR_INVALID_CONTEXT = -10,
  LA_ERROR_WATCH_NOT_AVAILABLE = -11,
  LA_ERROR_NOT_INTERACTIVE = -1004
} LaError;

LA_AVAILABLE
GQuark la_error_quark (void);

LA_AVAILABLE
gchar *la_error_get_dbus_error_name (const GError *error);

G_END_DECLS
