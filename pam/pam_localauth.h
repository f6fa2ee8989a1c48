// pam_localauth: the PAM module of LocalAuth for Linux.
//
// Why C, built by make and not by SwiftPM: PAM modules are loaded into
// setuid programs (sudo, su, login, polkit's helper). A Swift module would
// map the Swift runtime (several MB) into every one of them, and SwiftPM
// links libswiftCore into every library it builds, even a C one. This one
// adds libdbus and nothing else (docs/PAM.md has the measurement). It keeps no
// state between calls and asks localauthd for everything: prints, lockout,
// the lid and remote-session rules all live in the service.
//
// The module's entry points are the standard ones from <security/pam_modules.h>;
// this header only names what the tests and the documentation refer to.
#ifndef PAM_LOCALAUTH_H
#define PAM_LOCALAUTH_H

/// Seconds the module waits for a finger before the stack moves on to the
/// password (`timeout=` overrides, 1 to 120).
#define PAM_LOCALAUTH_DEFAULT_TIMEOUT 15
#define PAM_LOCALAUTH_MAX_TIMEOUT 120

#endif
