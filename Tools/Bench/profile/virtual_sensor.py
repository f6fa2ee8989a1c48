"""The virtual finger, shared by the profile scripts: libfprint's
virtual_device protocol ("SCAN id" on its socket), which only listens while
the device is open (hence the retries)."""
import socket
import sys
import time


def scan(path, scan_id, acknowledged=False, attempts=500, ack_timeout=5, who="profile"):
    """Present finger `scan_id` on the virtual sensor at `path`; with
    `acknowledged`, wait until the driver has taken it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    for _ in range(attempts):
        try:
            s.connect(path)
            break
        except OSError:
            time.sleep(0.01)
    else:
        sys.exit(f"{who}: cannot connect to the virtual sensor {path}")
    s.sendall(("SCAN " + scan_id).encode())
    if acknowledged:
        s.settimeout(ack_timeout)
        s.recv(16)
    s.close()
