#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Copies one <interface> of a D-Bus introspection file (the contract,
dbus/org.example.LocalAuth.xml, also describes the org.freedesktop.DBus.*
interfaces every object has): gdbus-codegen then generates the proxy of that
interface alone, not code for interfaces GDBus already implements.

    only-interface.py INPUT OUTPUT INTERFACE
"""
import sys
import xml.etree.ElementTree as ElementTree

source, output, wanted = sys.argv[1:4]
root = ElementTree.parse(source).getroot()
kept = [interface for interface in root.findall("interface") if interface.get("name") == wanted]
if len(kept) != 1:
    sys.exit(f"only-interface.py: {source} has {len(kept)} interface(s) named {wanted}")
node = ElementTree.Element("node")
node.append(kept[0])
ElementTree.ElementTree(node).write(output, encoding="unicode", xml_declaration=False)
