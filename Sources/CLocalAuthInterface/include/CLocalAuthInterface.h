// CLocalAuthInterface: the D-Bus interface XML, compiled into the binary.
//
// Why this shim exists: dbus/org.example.LocalAuth.xml is the contract, and
// the service must answer Introspect with exactly that file. `#embed` puts the
// file's bytes into the binary at build time, so there is one source of truth
// and nothing to keep in sync or to find on disk at run time.
#ifndef CLOCALAUTHINTERFACE_H
#define CLOCALAUTHINTERFACE_H
/// The NUL-terminated contents of dbus/org.example.LocalAuth.xml.
const char *clocalauth_interface_xml(void);
/// dbus/net.reactivated.Fprint.Manager.xml and .Device.xml (`localauthd --fprintd`).
const char *clocalauth_fprintd_manager_xml(void);
const char *clocalauth_fprintd_device_xml(void);
#endif
