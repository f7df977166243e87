"""Runs a command with its standard error on a pseudo-terminal, as on a user's terminal,
and copies what it wrote there to standard output; exits with the command's exit code.

usage: on-terminal.py COMMAND [ARG...]
The command gets TERM=xterm (lit clears TERM) and the rest of the environment as given.
"""
import os
import subprocess
import sys

controller, terminal = os.openpty()
environment = dict(os.environ, TERM="xterm")
process = subprocess.Popen(sys.argv[1:], stderr=terminal, env=environment)
os.close(terminal)
written = bytearray()
while True:
    try:
        chunk = os.read(controller, 4096)
    except OSError:  # EIO: the command closed the terminal's last writer
        break
    if not chunk:
        break
    written += chunk
sys.stdout.buffer.write(bytes(written))
sys.exit(process.wait())
