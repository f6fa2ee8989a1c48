#!/usr/bin/python3
"""A stand-in for /dev/log: receives syslog datagrams on SOCKET and appends
each, one a line, to FILE, until killed.

    syslog-listener.py SOCKET FILE

The rig has no journal; a PAM host started in a private mount namespace
with SOCKET bound over /dev/log logs here, so a test can read what
pam_syslog said (LoginKeyringHostSupport.swift).
"""
import os
import socket
import sys

path, out = sys.argv[1], sys.argv[2]
listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
listener.bind(path)
os.chmod(path, 0o666)
with open(out, "ab", buffering=0) as log:
    while True:
        log.write(listener.recv(65536).rstrip(b"\0\n") + b"\n")
