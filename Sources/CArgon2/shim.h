// CArgon2: Debian's libargon2 (libargon2-dev), for the login password's
// Argon2id in localauthctl (docs/KEYRING.md); the PAM module links it in C.
#ifndef CARGON2_SHIM_H
#define CARGON2_SHIM_H
#include <argon2.h>
#endif
