"""Reading files without trusting their paths: confinement by descriptor, capped reads.

Two readers share one rule — *the size is checked with ``fstat`` on the open
descriptor, and at most the cap is read from it*:

- :func:`read_confined` reads a workspace file (bootstrap files, skills,
  ``memory_file``, ``@import``) so that no byte from outside the allowed roots
  can be read, even while someone flips files or directories between regular
  entries and symlinks. Checking a path with ``resolve()`` and then reopening it
  by name loses that race; here the resolved path is reopened *component by
  component from a descriptor of the root*, each component with ``O_NOFOLLOW``,
  so a component that became a symlink after the check makes the open fail
  (the read is then retried from the start, and refused when the path keeps
  changing).
- :func:`read_capped` reads a file the user names (pipeline, state, transcript,
  ``ctxcore.yaml``): ``-`` is stdin, FIFOs and devices are refused at once
  (opened with ``O_NONBLOCK``, so a FIFO never hangs the command).

Both raise :class:`~ctxcore.errors.FileRefused` naming the file and the rule.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

from ctxcore.errors import FileRefused

__all__ = ["FileRefused", "read_confined", "read_capped", "inside", "DEFAULT_MAX_BYTES"]

#: default size cap of one workspace file (bytes).
DEFAULT_MAX_BYTES = 256 * 1024
_CHUNK = 1 << 20
_RETRIES = 3
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def inside(path: Path, root: Path) -> bool:
    """True when resolved ``path`` is ``root`` or below it, compared segment by segment."""
    return path == root or root in path.parents


def _read_fd(fd: int, name: str, max_bytes: int) -> bytes:
    """At most ``max_bytes`` from a descriptor of a regular file; anything else is refused before reading."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"{name}: not a regular file (a directory, FIFO, socket or device); only regular files are read")
    if st.st_size > max_bytes:
        raise FileRefused(f"{name}: {st.st_size} bytes is over the {max_bytes}-byte limit")
    return _read_at_most(fd, name, max_bytes)


def _read_at_most(fd: int, name: str, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:  # the file grew after fstat
            raise FileRefused(f"{name}: over the {max_bytes}-byte limit")


def _open_below(root: Path, parts: Sequence[str]) -> int:
    """A descriptor of ``root/parts...``, every component opened relative to its parent with ``O_NOFOLLOW``."""
    dfd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in parts[:-1]:
            nfd = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dfd)
            os.close(dfd)
            dfd = nfd
        return os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dfd)
    finally:
        os.close(dfd)


def read_confined(path: Path, roots: Sequence[Path], *, max_bytes: int = DEFAULT_MAX_BYTES, name: str | None = None) -> bytes:
    """The bytes of workspace file ``path`` when it is, at the moment of reading, a regular file below one of ``roots``.

    ``path`` may contain symlinks that stay inside the roots; it is resolved, the
    resolved path must lie below a root, and then it is reopened from that
    root's descriptor one real component at a time (``O_NOFOLLOW``), so what is
    read is exactly what was checked. ``roots`` must be resolved directories.

    Raises:
        FileRefused: outside the roots, not a regular file, over ``max_bytes``,
            or changing under the reader on every attempt.
        FileNotFoundError: the file does not exist.
    """
    shown = name or str(path)
    for _ in range(_RETRIES):
        try:
            resolved = path.resolve(strict=True)
        except FileNotFoundError:
            raise
        except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, permissions, a NUL byte
            raise FileRefused(f"{shown}: cannot resolve: {exc}") from exc
        root = next((r for r in roots if inside(resolved, r) and resolved != r), None)
        if root is None:
            raise FileRefused(f"{shown}: resolves to {resolved}, outside the allowed root(s) {', '.join(map(str, roots))}")
        try:
            fd = _open_below(root, resolved.relative_to(root).parts)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.EMLINK):
                continue  # a component was swapped for a symlink (or removed) after resolving: look again
            raise FileRefused(f"{shown}: cannot open: {exc.strerror}") from exc
        try:
            return _read_fd(fd, shown, max_bytes)
        finally:
            os.close(fd)
    raise FileRefused(f"{shown}: the path kept changing while it was read (a symlink swapped in); not read")


def read_capped(path: str, *, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of a file the user named (``-`` is stdin), refused before reading when it is over ``max_bytes``.

    A FIFO, socket or device is refused at once (the open does not block), since
    such a "file" can be endless or never answer; pipe data in on stdin instead.

    Raises:
        FileRefused: not a regular file, over ``max_bytes``, or unreadable.
    """
    if path == "-":
        data = sys.stdin.buffer.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise FileRefused(f"<stdin>: {what} is over the {max_bytes}-byte limit")
        return data
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    except FileNotFoundError:
        raise FileRefused(f"{path}: cannot read {what}: no such file") from None
    except (OSError, ValueError) as exc:
        raise FileRefused(f"{path}: cannot read {what}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO, socket or device"
            raise FileRefused(f"{path}: {what} is {kind}, not a regular file (to stream it, pass '-' and pipe it in on stdin)")
        if st.st_size > max_bytes:
            raise FileRefused(f"{path}: {what} is {st.st_size} bytes, over the {max_bytes}-byte limit")
        try:
            return _read_at_most(fd, path, max_bytes)
        except OSError as exc:
            raise FileRefused(f"{path}: cannot read {what}: {exc.strerror}") from exc
    finally:
        os.close(fd)
