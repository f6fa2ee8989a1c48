"""A program on a pseudo-terminal, answered as a person at a terminal would.

Shared by pty-answer.py and with-polkit-agent.py (tests of interactive paths:
localauthctl's keyboard prompt, polkit's text agent asking for a password).
"""
import os
import pty
import select
import sys
import time


def run(child, prompt, answer, settle=0.2, limit=180):
    """Forks `child()` onto a new pty; once `prompt` (bytes) has appeared in
    its output, waits `settle` seconds and types `answer`
    and Enter (answer None: never). Copies the output to stdout and returns
    the child's exit status."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            child()
        finally:
            os._exit(127)
    seen, answered = b"", answer is None
    deadline = time.monotonic() + limit
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
                time.sleep(settle)
                os.write(fd, answer.encode() + b"\n")
                answered = True
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
