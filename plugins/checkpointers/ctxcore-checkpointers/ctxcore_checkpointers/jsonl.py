"""``jsonl``: one append-only file of checksummed records per thread, in one directory.

Durability: ``save_checkpoint`` returns after the record is written and fsynced
(and, when it created the file or the directory, after the directory is fsynced).
Several processes may share the directory: every access takes ``flock`` on the
thread's file (exclusive to write, shared to read), and re-checks after locking
that the path still names the locked file, because ``prune`` replaces files by
rename and ``delete_thread`` unlinks them. Network file systems are unsupported
(``flock`` and rename atomicity are not reliable there).

``prune`` writes ``.<file>.<pid>.<thread>.tmp`` and renames it over the file; a
process killed in between leaves the temp file behind. Every prune, holding the
thread's exclusive lock (so no live prune of that thread can own one), removes
that thread's temp files whose writer process is gone or which are older than
:data:`STALE_TMP_SECONDS`.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from pydantic import BaseModel, ConfigDict

from ctxcore.kit import (
    AsyncCheckpointerMixin,
    check_keep_last,
    check_thread_id,
    encode_checkpoint,
    ensure_newer,
)
from ctxcore_checkpointers.jsonl_format import (
    encode_line,
    parse_record,
    record_step,
    scan,
)

__all__ = ["JsonlCheckpointer", "JsonlConfig"]

_SUFFIX = ".jsonl"
_HASHED = "%h"  # quote() never writes "%h", so hashed names cannot collide with quoted ones
_MAX_NAME = 200


class JsonlConfig(BaseModel):
    """Options of the ``jsonl`` checkpointer."""

    model_config = ConfigDict(extra="forbid")

    #: directory holding one ``<thread>.jsonl`` file per thread (created on first save).
    path: str = ".ctx/checkpoints"


@dataclass(frozen=True)
class _Tail:
    """What this process last wrote to a file, so the next save scans only what is new."""

    dev: int
    ino: int
    end: int
    last_start: int
    last_seq: int
    last_step: int


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _makedirs_durable(path: Path) -> None:
    """Create ``path`` and its missing parents, fsyncing each parent whose entries changed."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            continue
        _fsync_dir(d.parent)


def _read_all(fd: int, start: int = 0) -> bytes:
    chunks: list[bytes] = []
    pos = start
    while True:
        chunk = os.pread(fd, 1 << 20, pos)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        pos += len(chunk)


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view = view[written:]
        offset += written


#: a prune's temp file older than this is stale even when its pid is alive (the pid may have been reused).
STALE_TMP_SECONDS = 600.0
_TMP = re.compile(r"^\.(?P<file>.+)\.(?P<pid>[0-9]+)\.[0-9]+\.tmp$")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return pid < 2**22  # PermissionError: alive, another user's; OverflowError: not a pid
    return True


def remove_stale_tmp(directory: Path, file_name: str, *, now: float | None = None) -> list[Path]:
    """Remove the prune temp files of ``file_name`` left by dead processes or older than STALE_TMP_SECONDS.

    Call it holding the thread file's exclusive lock. Returns the removed paths.
    """
    now = time.time() if now is None else now
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        match = _TMP.match(entry.name)
        if match is None or match["file"] != file_name or not entry.is_file(follow_symlinks=False):
            continue
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except FileNotFoundError:
            continue
        if age < STALE_TMP_SECONDS and _pid_alive(int(match["pid"])):
            continue  # possibly a live writer's (another prune cannot hold this lock, but be certain)
        try:
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except FileNotFoundError:
            pass
    return removed


class JsonlCheckpointer(AsyncCheckpointerMixin):
    """Checkpoints as jsonl files; the last complete line of a thread's file is its latest state."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._tails: dict[Path, _Tail] = {}
        self._tails_lock = threading.Lock()

    # ------------------------------------------------------------ file names
    def file_for(self, thread_id: str) -> Path:
        """The file holding ``thread_id`` (percent-encoded; hashed when the name would be too long)."""
        name = quote(check_thread_id(thread_id), safe="")
        if len(name) > _MAX_NAME:
            name = _HASHED + hashlib.sha256(thread_id.encode("utf-8")).hexdigest()
        return self.path / (name + _SUFFIX)

    @contextmanager
    def _locked(self, file: Path, mode: int, *, create: bool = False) -> Iterator[tuple[int, bool] | None]:
        """Open ``file`` and flock it; yields (fd, created) or None when it does not exist."""
        while True:
            created = False
            try:
                if create:
                    try:
                        fd = os.open(file, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
                        created = True
                    except FileExistsError:
                        fd = os.open(file, os.O_RDWR | os.O_CLOEXEC)
                else:
                    fd = os.open(file, (os.O_RDWR if mode == fcntl.LOCK_EX else os.O_RDONLY) | os.O_CLOEXEC)
            except FileNotFoundError:
                if create:
                    continue  # unlinked between the two opens: try again
                yield None
                return
            try:
                fcntl.flock(fd, mode)
                st = os.fstat(fd)
                try:
                    now = os.stat(file)
                except FileNotFoundError:
                    now = None
                if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                    continue  # replaced (prune) or removed (delete) while we waited: lock the current file
                yield fd, created
                return
            finally:
                os.close(fd)  # also releases the lock

    # ------------------------------------------------------------ writing
    def save_checkpoint(
        self,
        thread_id: str,
        step: int,
        state_dump: Any,
        tree_state: Any = None,
        runtime_metadata: Any = None,
    ) -> None:
        """Append the checkpoint and fsync; raises ``StaleWrite`` unless ``step`` is newer than the latest."""
        enc = encode_checkpoint(thread_id, step, state_dump, tree_state, runtime_metadata)
        file = self.file_for(thread_id)
        if not self.path.is_dir():
            _makedirs_durable(self.path)
        with self._locked(file, fcntl.LOCK_EX, create=True) as opened:
            assert opened is not None
            fd, created = opened
            end, last_seq, last_step = self._valid_end(fd, file)
            ensure_newer(thread_id, step, last_step)
            line = encode_line(last_seq + 1, enc)
            if os.fstat(fd).st_size != end:
                os.ftruncate(fd, end)  # cut off a torn last record before appending
            _write_all(fd, line, end)
            os.fsync(fd)
            if created or end == 0:  # a new (or never completed) file: make its name durable too
                _fsync_dir(self.path)
            st = os.fstat(fd)
            with self._tails_lock:
                self._tails[file] = _Tail(st.st_dev, st.st_ino, end + len(line), end, last_seq + 1, step)

    def _valid_end(self, fd: int, file: Path) -> tuple[int, int, int | None]:
        """(end of the valid records, last seq or 0, last step or None) of the locked file."""
        st = os.fstat(fd)
        with self._tails_lock:
            tail = self._tails.get(file)
        base, prev_seq = 0, None
        if tail is not None and (tail.dev, tail.ino) == (st.st_dev, st.st_ino) and st.st_size >= tail.end:
            # Trust the prefix this process verified only if its last record is still in place
            # (same seq, end and step: a file recreated on a reused inode may repeat the layout).
            chunk = os.pread(fd, tail.end - tail.last_start, tail.last_start)
            check = scan(chunk, file=str(file), base=tail.last_start)
            if (check.last is not None and check.last.seq == tail.last_seq and check.valid_end == tail.end
                    and record_step(chunk, check.last, file=str(file), base=tail.last_start) == tail.last_step):
                base, prev_seq = tail.end, tail.last_seq
        data = _read_all(fd, base)
        result = scan(data, file=str(file), base=base, prev_seq=prev_seq)
        if result.last is None:
            if prev_seq is None:
                return 0, 0, None
            assert tail is not None
            return tail.end, tail.last_seq, tail.last_step
        return result.valid_end, result.last.seq, record_step(data, result.last, file=str(file), base=base)

    # ------------------------------------------------------------ reading
    def _records(self, thread_id: str) -> tuple[bytes, Any, Path] | None:
        file = self.file_for(thread_id)
        with self._locked(file, fcntl.LOCK_SH) as opened:
            if opened is None:
                return None
            data = _read_all(opened[0])
            st = os.fstat(opened[0])
        result = scan(data, file=str(file))
        last = result.last
        if last is not None:
            # An agent reads its thread and then saves: let that save skip the rescan.
            step = record_step(data, last, file=str(file))
            with self._tails_lock:
                self._tails[file] = _Tail(st.st_dev, st.st_ino, result.valid_end, last.start, last.seq, step)
        return data, result, file

    def get_checkpoint(self, thread_id: str) -> dict[str, Any] | None:
        """The newest complete record of the thread (a torn last record is ignored), or ``None``."""
        found = self._records(thread_id)
        if found is None or found[1].last is None:
            return None
        data, result, file = found
        return parse_record(data, result.last, file=str(file), thread_id=thread_id)

    def list_checkpoints(self, thread_id: str) -> list[dict[str, Any]]:
        """Every complete record of the thread, oldest first."""
        found = self._records(thread_id)
        if found is None:
            return []
        data, result, file = found
        return [parse_record(data, ref, file=str(file), thread_id=thread_id) for ref in result.records]

    def list_threads(self) -> list[str]:
        """Threads whose file holds at least one complete line, sorted."""
        try:
            names = os.listdir(self.path)
        except FileNotFoundError:
            return []
        threads = []
        for name in names:
            if not name.endswith(_SUFFIX):
                continue
            file = self.path / name
            stem = name[: -len(_SUFFIX)]
            if stem.startswith(_HASHED):
                first = self._first_record(file)
                if first is not None:
                    threads.append(first)
                continue
            thread_id = unquote(stem, errors="surrogateescape")
            if quote(thread_id, safe="") == stem and self._has_complete_line(file):  # skip foreign files
                threads.append(thread_id)
        return sorted(threads)

    @staticmethod
    def _has_complete_line(file: Path) -> bool:
        try:
            with open(file, "rb") as fh:
                while chunk := fh.read(1 << 16):
                    if b"\n" in chunk:
                        return True
        except FileNotFoundError:
            pass
        return False

    def _first_record(self, file: Path) -> str | None:
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            return None
        result = scan(data, file=str(file))
        if not result.records:
            return None
        return str(parse_record(data, result.records[0], file=str(file))["thread_id"])

    # ------------------------------------------------------------ removing
    def delete_thread(self, thread_id: str) -> None:
        """Remove the thread's file (no error when it has none)."""
        file = self.file_for(thread_id)
        with self._locked(file, fcntl.LOCK_EX) as opened:
            if opened is None:
                return
            os.unlink(file)
            _fsync_dir(self.path)
        with self._tails_lock:
            self._tails.pop(file, None)

    def prune(self, thread_id: str, keep_last: int) -> int:
        """Rewrite the thread's file with its newest ``keep_last`` records (atomic rename); return how many went."""
        check_keep_last(keep_last)
        file = self.file_for(thread_id)
        with self._locked(file, fcntl.LOCK_EX) as opened:
            if opened is None:
                return 0
            remove_stale_tmp(self.path, file.name)  # left by a prune killed before its rename
            data = _read_all(opened[0])
            result = scan(data, file=str(file))
            removed = len(result.records) - keep_last
            if removed <= 0:
                return 0
            start = result.records[removed].start
            tmp = file.with_name(f".{file.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                _write_all(fd, data[start : result.valid_end], 0)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, file)
            _fsync_dir(self.path)
        with self._tails_lock:
            self._tails.pop(file, None)
        return removed

    def close(self) -> None:
        """Nothing stays open between calls; present for symmetry with the other backends."""
