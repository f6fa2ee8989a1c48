#include "CLocalAuthInterface.h"
#pragma clang diagnostic ignored "-Wc23-extensions"

static const char interface_xml[] = {
#embed "../../dbus/org.example.LocalAuth.xml"
    , 0
};

const char *clocalauth_interface_xml(void) { return interface_xml; }

// fprintd's interfaces, served with `localauthd --fprintd` (Fprintd/).
static const char fprintd_manager_xml[] = {
#embed "../../dbus/net.reactivated.Fprint.Manager.xml"
    , 0
};
static const char fprintd_device_xml[] = {
#embed "../../dbus/net.reactivated.Fprint.Device.xml"
    , 0
};
const char *clocalauth_fprintd_manager_xml(void) { return fprintd_manager_xml; }
const char *clocalauth_fprintd_device_xml(void) { return fprintd_device_xml; }
