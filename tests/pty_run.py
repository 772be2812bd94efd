"""Run a command with its stderr on a real pseudo-terminal and read back everything the terminal got.

Progress bars are drawn only when stderr is a terminal, so their tests need one: a pty whose slave end
is the child's stderr and whose master the test reads until the child closes it. stdout stays a pipe
(what a script or ``| jq`` sees), returned apart.
"""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without any CTXCORE_ setting, 100 columns wide, plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}, "COLUMNS": "100", **extra}


def run_on_terminal(argv: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 120) -> tuple[int, str, str]:
    """Run ``argv`` with stderr on a 100x30 pseudo-terminal; return (exit code, stdout, everything the terminal got)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                            env=env or clean_env(), cwd=ROOT)
    os.close(slave)
    terminal = drain(master)
    out = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait(timeout=timeout)
    return code, out, terminal


def drain(master: int) -> str:
    """Read a pty's master end until the child closes the terminal, then close it; the text it got."""
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")
