#include "CLocalAuthInterface.h"
#pragma clang diagnostic ignored "-Wc23-extensions"

static const char interface_xml[] = {
#embed "../../dbus/org.example.LocalAuth.xml"
    , 0
};

const char *clocalauth_interface_xml(void) { return interface_xml; }
