/// The D-Bus interface files of dbus/, compiled into the binary: the service
/// answers Introspect with exactly these bytes, so dbus/*.xml is the one
/// source of truth and nothing is found on disk at run time. The strings are
/// generated at build time by the EmbedInterfaceXML plugin
/// (Plugins/EmbedInterfaceXML: `localAuth`, `fprintdManager`, `fprintdDevice`);
/// InterfaceXMLTests compares them with the files.
package enum Interfaces {}
