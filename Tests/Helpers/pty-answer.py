#!/usr/bin/python3
"""Runs COMMAND on a pseudo-terminal, as a person at a terminal would, and
types INPUT (plus Enter) once PROMPT has appeared in its output.

    pty-answer.py PROMPT INPUT COMMAND [ARG...]

For tests of interactive programs (localauthctl evaluate's keyboard cancel and
fallback). Output is copied to stdout; the exit status is the command's.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptysession  # noqa: E402

if len(sys.argv) < 4:
    sys.exit(__doc__)
prompt, answer, command = sys.argv[1].encode(), sys.argv[2], sys.argv[3:]
sys.exit(ptysession.run(lambda: os.execvp(command[0], command), prompt, answer, limit=120))
