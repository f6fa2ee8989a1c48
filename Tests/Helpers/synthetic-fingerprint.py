#!/usr/bin/python3
"""Deterministic synthetic fingerprint images for libfprint's virtual_image reader.

A ridge pattern is cos(phase): the phase is a whorl around a core plus a slow
per-finger drift, and every "spiral" term atan2 around a point adds one ridge
ending or bifurcation there (a phase dislocation), which is what NBIS's mindtct
detects as a minutia and bozorth3 pairs up. The same finger (seed) gives the
same minutiae; a small shift and noise per scan (`scan`) keep two scans from
being identical bytes. A different seed puts the minutiae elsewhere.

Usage: synthetic-fingerprint.py send SOCKET FINGER SCAN  (one image to virtual_image)
       synthetic-fingerprint.py pgm FILE FINGER SCAN    (to look at)
"""
import socket
import struct
import sys

import numpy

WIDTH, HEIGHT = 256, 320
RIDGE_PERIOD = 9.0  # pixels: about 0.45 mm at 500 dpi


def image(finger: str, scan: int) -> bytes:
    # zlib.crc32 rather than hash(): Python salts str hashes per process.
    import zlib
    rng = numpy.random.default_rng(zlib.crc32(finger.encode()))
    y, x = numpy.mgrid[0:HEIGHT, 0:WIDTH].astype(numpy.float64)
    scan_rng = numpy.random.default_rng(1000 + scan)
    dx, dy = scan_rng.integers(-4, 5, size=2)  # the finger lands a little elsewhere each time
    x, y = x - dx, y - dy
    core_x, core_y = rng.uniform(0.35, 0.65) * WIDTH, rng.uniform(0.35, 0.6) * HEIGHT
    radius = numpy.hypot((x - core_x) * rng.uniform(0.8, 1.2), y - core_y)
    phase = 2 * numpy.pi * radius / RIDGE_PERIOD
    phase += 2 * numpy.pi * (rng.uniform(-0.04, 0.04) * x + rng.uniform(-0.04, 0.04) * y)
    for _ in range(40):
        mx, my = rng.uniform(0.1, 0.9) * WIDTH, rng.uniform(0.1, 0.9) * HEIGHT
        phase += rng.choice([-1.0, 1.0]) * numpy.arctan2(y - my, x - mx)
    ridges = numpy.cos(phase)
    ridges += scan_rng.normal(0, 0.15, ridges.shape)
    # A finger's oval, dark ridges on a light background.
    inside = ((x - WIDTH / 2) / (WIDTH * 0.47)) ** 2 + ((y - HEIGHT / 2) / (HEIGHT * 0.48)) ** 2 <= 1
    pixels = numpy.where(inside, 128 + 110 * numpy.clip(ridges, -1, 1), 255)
    return pixels.clip(0, 255).astype(numpy.uint8).tobytes()


def send(path: str, pixels: bytes) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        sock.sendall(struct.pack("=ii", WIDTH, HEIGHT) + pixels)


def main() -> None:
    verb, target, finger, scan = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    pixels = image(finger, scan)
    if verb == "send":
        send(target, pixels)
    elif verb == "pgm":
        with open(target, "wb") as out:
            out.write(b"P5\n%d %d\n255\n" % (WIDTH, HEIGHT) + pixels)
    else:
        sys.exit("unknown verb " + verb)


if __name__ == "__main__":
    main()
