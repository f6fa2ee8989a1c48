// CSecret: Debian's libsecret (libsecret-1-dev), for localauthctl keyring
// (docs/KEYRING.md). Its session encoding of a secret is "unstable" API,
// which seahorse uses for the same purpose; the define acknowledges that.
#ifndef CSECRET_SHIM_H
#define CSECRET_SHIM_H
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
#endif
