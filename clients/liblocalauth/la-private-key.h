/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#if !defined(LOCALAUTH_INSIDE) && !defined(LOCALAUTH_COMPILATION)
#error "Only <localauth.h> can be included directly."
#endif

#include <gio/gio.h>
#include "la-error.h"

G_BEGIN_DECLS

/* Apple's SecKeyAlgorithm names for the P-256 keys of rights (the strings
 * the service takes; kSecKeyAlgorithm... on Apple's platforms). */
#define LA_KEY_ALGORITHM_ECDSA_SIGNATURE_MESSAGE_X962_SHA256 "algid:sign:ECDSA:message-X962:SHA256"
#define LA_KEY_ALGORITHM_ECDSA_SIGNATURE_DIGEST_X962_SHA256 "algid:sign:ECDSA:digest-X962:SHA256"
#define LA_KEY_ALGORITHM_ECIES_ENCRYPTION_COFACTOR_VARIABLE_IV_X963_SHA256_AESGCM "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV"
#define LA_KEY_ALGORITHM_ECIES_ENCRYPTION_STANDARD_VARIABLE_IV_X963_SHA256_AESGCM "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV"
#define LA_KEY_ALGORITHM_ECDH_KEY_EXCHANGE_STANDARD "algid:keyexchange:ECDH"
#define LA_KEY_ALGORITHM_ECDH_KEY_EXCHANGE_COFACTOR "algid:keyexchange:ECDHC"
#define LA_KEY_ALGORITHM_ECDH_KEY_EXCHANGE_STANDARD_X963_SHA256 "algid:keyexchange:ECDH:KDFX963:SHA256"
#define LA_KEY_ALGORITHM_ECDH_KEY_EXCHANGE_COFACTOR_X963_SHA256 "algid:keyexchange:ECDHC:KDFX963:SHA256"

#define LA_TYPE_PRIVATE_KEY (la_private_key_get_type ())
LA_AVAILABLE
G_DECLARE_FINAL_TYPE (LaPrivateKey, la_private_key, LA, PRIVATE_KEY, GObject)

LA_AVAILABLE
GBytes *la_private_key_get_public_key (LaPrivateKey *self);
LA_AVAILABLE
void la_private_key_sign (LaPrivateKey *self, GBytes *data, const gchar *algorithm, GCancellable *cancellable,
                          GAsyncReadyCallback callback, gpointer user_data);
LA_AVAILABLE
GBytes *la_private_key_sign_finish (LaPrivateKey *self, GAsyncResult *result, GError **error);
LA_AVAILABLE
void la_private_key_decrypt (LaPrivateKey *self, GBytes *data, const gchar *algorithm, GCancellable *cancellable,
                             GAsyncReadyCallback callback, gpointer user_data);
LA_AVAILABLE
GBytes *la_private_key_decrypt_finish (LaPrivateKey *self, GAsyncResult *result, GError **error);
LA_AVAILABLE
void la_private_key_exchange_keys (LaPrivateKey *self, GBytes *public_key, const gchar *algorithm,
                                   GVariant *parameters, GCancellable *cancellable, GAsyncReadyCallback callback,
                                   gpointer user_data);
LA_AVAILABLE
GBytes *la_private_key_exchange_keys_finish (LaPrivateKey *self, GAsyncResult *result, GError **error);

G_END_DECLS
