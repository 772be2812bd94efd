"""Reading workspace files safely, and caching what is rendered from them.

Confinement rules (``confined_file``): a configured name is relative, has no
``..`` segment, and after following symlinks resolves to a regular file inside
the resolved root (compared by path segment, so ``/work/ab`` is not inside
``/work/a``). The file is then read by :func:`ctxcore.kit.read_confined`, which
reopens it from the root's descriptor one component at a time with
``O_NOFOLLOW`` and checks the size with ``fstat`` before reading: a file or
directory swapped for a symlink after the check is never followed. Binary
files (a NUL byte in the first 8 KiB) are refused; invalid UTF-8 is replaced.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Generic, TypeVar

from ctxcore.kit import DEFAULT_MAX_BYTES, FileRefused, inside, read_confined

__all__ = ["FileRefused", "confined_file", "inside", "read_text", "RenderCache", "DEFAULT_MAX_BYTES"]

_SNIFF = 8192

T = TypeVar("T")


def check_relative(name: str) -> None:
    """Refuse absolute names, drive letters, ``~`` and ``..`` segments.

    Raises:
        FileRefused: naming the rule that failed.
    """
    if not name or name.strip() != name:
        raise FileRefused(f"{name!r}: empty or padded file name")
    if PurePosixPath(name).is_absolute() or PureWindowsPath(name).is_absolute() or PureWindowsPath(name).drive or name.startswith("~"):
        raise FileRefused(f"{name!r}: absolute paths are not allowed, name a file relative to the workspace")
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        raise FileRefused(f"{name!r}: '..' is not allowed, name a file inside the workspace")


def confined_file(root: Path, name: str, *, max_bytes: int = DEFAULT_MAX_BYTES, allowed_roots: Sequence[Path] = (), relative_ok: bool = False) -> Path | None:
    """The resolved path of ``root/name`` when every rule holds; ``None`` when it does not exist.

    Args:
        root: a resolved directory.
        name: the configured relative name (``relative_ok`` allows ``..`` for imports,
            which are then confined to ``allowed_roots``).
        max_bytes: files larger than this are refused without being opened.
        allowed_roots: resolved roots the file may live in (default: ``root``).

    Raises:
        FileRefused: outside the roots, not a regular file, or too large.
    """
    if not relative_ok:
        check_relative(name)
    elif PurePosixPath(name).is_absolute() or name.startswith("~"):
        raise FileRefused(f"{name!r}: absolute paths are not allowed")
    candidate = root / name
    try:
        resolved = candidate.resolve(strict=True)  # follows every symlink first
    except FileNotFoundError:
        return None
    except (OSError, RuntimeError, ValueError) as exc:  # symlink loop, permission, NUL byte in the name
        raise FileRefused(f"{name!r}: cannot resolve: {exc}") from exc
    roots = list(allowed_roots) or [root]
    if not any(inside(resolved, r) for r in roots):
        raise FileRefused(f"{name!r}: resolves to {resolved}, outside the allowed root(s) {', '.join(map(str, roots))}")
    try:
        st = resolved.stat()
    except FileNotFoundError:  # removed (or swapped) since it was resolved
        return None
    except OSError as exc:
        raise FileRefused(f"{name!r}: cannot stat: {exc.strerror}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"{name!r}: not a regular file")
    if st.st_size > max_bytes:
        raise FileRefused(f"{name!r}: {st.st_size} bytes is over the {max_bytes}-byte limit (raise max_bytes to allow it)")
    return resolved


def read_text(path: Path, *, roots: Sequence[Path], max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Read a confined file as UTF-8 (invalid bytes replaced), refusing binary content.

    ``path`` is read only while it is a regular file below one of ``roots`` (see
    :func:`ctxcore.kit.read_confined`); at most ``max_bytes`` are read.

    Raises:
        FileRefused: outside the roots, binary content, or larger than ``max_bytes``.
        FileNotFoundError: removed since it was found (callers treat it as missing).
    """
    data = read_confined(path, roots, max_bytes=max_bytes, name=repr(path.name))
    if b"\x00" in data[:_SNIFF]:
        raise FileRefused(f"{path.name!r}: binary file (NUL bytes), only text files are read")
    return data.decode("utf-8", errors="replace")


Signature = tuple[tuple[str, int, int, int, int], ...]


def signature(paths: Sequence[Path]) -> Signature:
    """(path, mtime_ns, size, ctime_ns, inode) of each path; a missing path has -1 everywhere.

    ``ctime`` and the inode catch a rewrite that keeps size and mtime (``os.utime``,
    ``rsync -t``, an atomic rename of a file with a copied mtime): ctime cannot be set
    back by a user, and a rename brings a new inode.
    """
    out = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append((str(p), st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino))
        except (OSError, ValueError):  # ValueError: a NUL byte in the name
            out.append((str(p), -1, -1, -1, -1))
    return tuple(out)


@dataclass
class _Entry(Generic[T]):
    value: T
    deps: list[Path]
    sig: Signature
    at: float


@dataclass
class RenderCache(Generic[T]):
    """Keeps a rendering until one of its source files changes (mtime, size, ctime, inode) or ``ttl`` passes.

    ``render`` returns the value and the paths it depends on (including paths it
    looked for and did not find, so their creation is noticed). ``ttl`` of
    ``None`` means no expiry; ``clock`` is injectable for tests.
    """

    ttl: float | None = None
    clock: Callable[[], float] = time.monotonic
    _entry: _Entry[T] | None = field(default=None, repr=False)
    renders: int = 0

    def get(self, render: Callable[[], tuple[T, list[Path]]]) -> T:
        """The cached value when still fresh, else a new rendering."""
        now = self.clock()
        e = self._entry
        if e is not None and (self.ttl is None or now - e.at < self.ttl) and signature(e.deps) == e.sig:
            return e.value
        value, deps = render()
        self.renders += 1
        self._entry = _Entry(value, deps, signature(deps), now)
        return value
