#!/usr/bin/python3
"""Runs a command with polkit's own text agent (pkttyagent) registered for it,
on a pseudo-terminal, and types PASSWORD when the agent asks for it.

    with-polkit-agent.py PASSWORD COMMAND [ARG...]

For tests of the password path (policy 2): polkit asks the agent registered
for the calling process; pkttyagent asks PAM through polkit-agent-helper-1, as
a desktop's agent would. It needs a terminal, hence the pty. The command's
output is copied to stdout (with what the agent printed); the exit status is
the command's. PASSWORD "-" never answers (the prompt is left waiting).
"""
import os
import pty
import select
import subprocess
import sys
import time


def child(command):
    # Register the agent for this very process, then become the command:
    # exec keeps the pid and start time that polkit identifies the process by.
    ready_r, ready_w = os.pipe()
    subprocess.Popen(["pkttyagent", "--process", str(os.getpid()), "--notify-fd", str(ready_w)],
                     pass_fds=[ready_w])
    os.close(ready_w)
    os.read(ready_r, 1)          # pkttyagent closes the fd once it is registered
    os.close(ready_r)
    os.execvp(command[0], command)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    password, command = sys.argv[1], sys.argv[2:]
    pid, fd = pty.fork()
    if pid == 0:
        try:
            child(command)
        finally:
            os._exit(127)
    seen = b""
    answered = False
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
            seen += data
            if not answered and password != "-" and b"assword" in seen.split(b"\n")[-1]:
                # pkttyagent turns echo off with TCSAFLUSH after printing the
                # prompt, which discards anything typed before: let it settle.
                time.sleep(0.5)
                os.write(fd, password.encode() + b"\n")
                answered = True
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            sys.exit(os.waitstatus_to_exitcode(status))
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


main()
