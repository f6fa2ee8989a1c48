#!/usr/bin/python3
"""Runs COMMAND on a pseudo-terminal, as a person at a terminal would, and
types INPUT (plus Enter) once PROMPT has appeared in its output.

    pty-answer.py PROMPT INPUT COMMAND [ARG...]

For tests of interactive programs (localauthctl evaluate's keyboard cancel and
fallback). Output is copied to stdout; the exit status is the command's.
"""
import os
import pty
import select
import sys
import time


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    prompt, answer, command = sys.argv[1].encode(), sys.argv[2], sys.argv[3:]
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    seen, answered = b"", False
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data:
                break
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
            seen += data
            if not answered and prompt in seen:
                time.sleep(0.2)
                os.write(fd, answer.encode() + b"\n")
                answered = True
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            sys.exit(os.waitstatus_to_exitcode(status))
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


main()
