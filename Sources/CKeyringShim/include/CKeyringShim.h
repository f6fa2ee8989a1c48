// Changing the login keyring's password through gnome-keyring's own
// interface on the user's session bus (docs/KEYRING.md): libsecret opens an
// encrypted session (dh-ietf1024-sha256-aes128-cbc-pkcs7; a service that
// offers only "plain" is refused), encodes both secrets for it, and
// org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.ChangeWithMasterPassword
// changes the password of /org/freedesktop/secrets/collection/login.
#ifndef CKEYRINGSHIM_H
#define CKEYRINGSHIM_H
#include <stddef.h>

/// 0 on success; otherwise -1 and *error (free with free()) says why.
int la_keyring_change_login_password(const char *original, size_t original_length, const char *master, size_t master_length,
                                     char **error);
#endif
