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
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptysession  # noqa: E402


def agent_then(command):
    # Register the agent for this very process, then become the command:
    # exec keeps the pid and start time that polkit identifies the process by.
    ready_r, ready_w = os.pipe()
    subprocess.Popen(["pkttyagent", "--process", str(os.getpid()), "--notify-fd", str(ready_w)],
                     pass_fds=[ready_w])
    os.close(ready_w)
    os.read(ready_r, 1)          # pkttyagent closes the fd once it is registered
    os.close(ready_r)
    os.execvp(command[0], command)


if len(sys.argv) < 3:
    sys.exit(__doc__)
password, command = sys.argv[1], sys.argv[2:]
# pkttyagent turns echo off with TCSAFLUSH after printing its prompt, which
# discards anything typed before: let it settle before typing.
sys.exit(ptysession.run(lambda: agent_then(command), b"assword",
                        None if password == "-" else password, settle=0.5))
