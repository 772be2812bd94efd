"""``jsonl`` thread store: one append-only, checksummed log file per thread (``<path>/threads/<thread>.jsonl``).

Each save is one line holding the step record and only the messages the turn
added::

    {"crc":"1a2b3c4d","record":{"step":4,"count":17,"created_at":"...","metadata":null,"messages":[...]}}\\n

``crc`` is the CRC-32 of the record's bytes. A line is written and fsynced
under the file's exclusive ``flock`` before ``append`` returns; the step's
messages are the concatenation of every line's ``messages`` up to it.

Damage rules: an unterminated last line is a write that never returned (a torn
tail): it is ignored on read and cut off by the next writer. A *terminated*
line whose checksum or JSON fails was acknowledged, so reading raises
``CheckpointCorrupt`` naming the file, line, thread and step — never a silent
rollback to the step before. ``salvage`` returns the steps before the damage.

A writer remembers where the file ended when it last wrote or read it, so the
next save reads only what other processes appended since: a save costs what
the turn added. ``prune`` merges the oldest lines into one (atomic rename).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ctxcore.kit import (
    StepRecord,
    ThreadSnapshot,
    UnknownStep,
    check_expected,
    check_keep_last,
    check_thread_id,
    corrupt,
    encode_messages,
    encode_metadata,
    fence,
    step_time,
    unknown_step,
)
from ctxcore_checkpointers.jsonl import (
    JsonlCheckpointer,
    _fsync_dir,
    _makedirs_durable,
    _read_all,
    _write_all,
    remove_stale_tmp,
)

__all__ = ["JsonlThreadStore", "LogLine", "scan_log"]

_LINE = re.compile(rb'\{"crc":"([0-9a-f]{8})","record":')


@dataclass(frozen=True)
class LogLine:
    """One complete, verified line: its step record and the messages it added."""

    step: int
    count: int
    created_at: str
    metadata: Any
    messages: list[Any]
    thread_id: str
    end: int  # offset just past its newline


def encode_log_line(thread_id: str, step: int, count: int, created_at: str, meta_json: str, texts: Sequence[str]) -> bytes:
    """The complete line (newline included) for one step."""
    head = json.dumps({"step": step, "count": count, "created_at": created_at, "thread_id": thread_id},
                      ensure_ascii=False, separators=(",", ":"))
    body = f'{head[:-1]},"metadata":{meta_json},"messages":[{",".join(texts)}]}}'.encode()
    return b'{"crc":"%08x","record":' % zlib.crc32(body) + body + b"}\n"


def _parse_line(line: bytes, file: Path, thread_id: str, after_step: int | None, end: int) -> LogLine:
    match = _LINE.match(line)
    guess = None if after_step is None else after_step + 1
    if match is None or not line.endswith(b"}"):
        raise corrupt(str(file), thread_id, guess, f"the line ending at byte {end} is not a log record")
    body = line[match.end(): -1]
    if zlib.crc32(body) != int(match.group(1), 16):
        raise corrupt(str(file), thread_id, guess, f"the checksum of the line ending at byte {end} does not match")
    try:
        rec = json.loads(body)
        return LogLine(int(rec["step"]), int(rec["count"]), str(rec["created_at"]), rec["metadata"],
                       list(rec["messages"]), str(rec["thread_id"]), end)
    except (ValueError, KeyError, TypeError) as exc:
        raise corrupt(str(file), thread_id, guess, f"the line ending at byte {end} is not a log record ({exc})") from exc


def scan_log(data: bytes, file: Path, thread_id: str, *, base: int = 0, after_step: int | None = None,
             strict: bool = True) -> tuple[list[LogLine], int]:
    """The verified lines of ``data`` (file bytes from offset ``base``) and where the complete lines end.

    The bytes after the last newline are a torn tail and are not returned.
    With ``strict=False`` scanning stops quietly at the first damaged line (salvage).
    """
    lines: list[LogLine] = []
    pos = 0
    while (nl := data.find(b"\n", pos)) != -1:
        try:
            line = _parse_line(data[pos:nl], file, thread_id, after_step, base + nl + 1)
        except Exception:
            if strict:
                raise
            return lines, base + pos
        lines.append(line)
        after_step = line.step
        pos = nl + 1
    return lines, base + pos


@dataclass(frozen=True)
class _End:
    """Where a file's verified lines ended when this process last saw it."""

    dev: int
    ino: int
    end: int
    step: int
    count: int


class JsonlThreadStore:
    """Thread logs as jsonl files under ``<path>/threads/``, shared by processes through ``flock``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.dir = self.path / "threads"
        self._files = JsonlCheckpointer(self.dir)  # file naming and locking
        self._ends: dict[Path, _End] = {}
        self._lock = threading.Lock()

    def file_for(self, thread_id: str) -> Path:
        """The log file of ``thread_id``."""
        return self._files.file_for(thread_id)

    # ------------------------------------------------------------ writing
    def _tail(self, fd: int, file: Path, thread_id: str) -> tuple[int, int | None, int]:
        """(end of the complete lines, latest step or None, message count) of the locked file, reading only new bytes."""
        st = os.fstat(fd)
        with self._lock:
            known = self._ends.get(file)
        base, step, count = 0, None, 0
        if known is not None and (known.dev, known.ino) == (st.st_dev, st.st_ino) and st.st_size >= known.end:
            base, step, count = known.end, known.step, known.count
        lines, end = scan_log(_read_all(fd, base), file, thread_id, base=base, after_step=step)
        if lines:
            step, count = lines[-1].step, lines[-1].count
        return end, step, count

    def _remember(self, fd: int, file: Path, end: int, step: int, count: int) -> None:
        st = os.fstat(fd)
        with self._lock:
            self._ends[file] = _End(st.st_dev, st.st_ino, end, step, count)

    def _write_line(self, thread_id: str, expected: int | None, build: Any) -> StepRecord:
        file = self.file_for(thread_id)
        if not self.dir.is_dir():
            _makedirs_durable(self.dir)
        with self._files._locked(file, fcntl.LOCK_EX, create=True) as opened:
            assert opened is not None
            fd, created = opened
            end, latest, count = self._tail(fd, file, thread_id)
            fence(thread_id, expected, latest)
            record, line = build(count)
            if os.fstat(fd).st_size != end:
                os.ftruncate(fd, end)  # cut off a torn tail before appending
            _write_all(fd, line, end)
            os.fsync(fd)
            if created or end == 0:
                _fsync_dir(self.dir)
            self._remember(fd, file, end + len(line), record.step, record.messages)
        return record

    def append(self, thread_id: str, messages: Sequence[Mapping[str, Any]], *, expected_step: int | None,
               metadata: Mapping[str, Any] | None = None, first_step: int = 0) -> StepRecord:
        """Append one fsynced line with the turn's messages and step record, fenced on ``expected_step``."""
        check_thread_id(thread_id)
        expected = check_expected(expected_step)
        texts, meta = encode_messages(messages), encode_metadata(metadata)
        step = first_step if expected is None else expected + 1

        def build(count: int) -> tuple[StepRecord, bytes]:
            record = StepRecord(thread_id, step, count + len(texts), step_time(), json.loads(meta))
            return record, encode_log_line(thread_id, step, record.messages, record.created_at, meta, texts)

        return self._write_line(thread_id, expected, build)

    def fork(self, thread_id: str, new_thread_id: str, step: int | None = None) -> StepRecord:
        """Write ``thread_id`` as of ``step`` as the first line of ``new_thread_id``."""
        check_thread_id(new_thread_id)
        snap = self.read(thread_id, step)
        if snap is None:
            raise UnknownStep(f"thread {thread_id!r} does not exist, so it cannot be forked")
        meta = {"forked_from": {"thread_id": thread_id, "step": snap.record.step}}
        return self.append(new_thread_id, snap.messages, expected_step=None, metadata=meta, first_step=snap.record.step)

    # ------------------------------------------------------------ reading
    def _lines(self, thread_id: str, *, strict: bool = True) -> list[LogLine] | None:
        file = self.file_for(thread_id)
        with self._files._locked(file, fcntl.LOCK_SH) as opened:
            if opened is None:
                return None
            lines, end = scan_log(_read_all(opened[0]), file, thread_id, strict=strict)
            if strict and lines:
                self._remember(opened[0], file, end, lines[-1].step, lines[-1].count)
        return lines or None

    def _snapshot(self, thread_id: str, lines: list[LogLine], step: int | None) -> ThreadSnapshot:
        upto = len(lines) if step is None else next((i + 1 for i, ln in enumerate(lines) if ln.step == step), 0)
        if upto == 0:
            raise unknown_step(thread_id, step or 0, [ln.step for ln in lines])
        messages = [m for ln in lines[:upto] for m in ln.messages]
        last = lines[upto - 1]
        if len(messages) != last.count:
            raise corrupt(str(self.file_for(thread_id)), thread_id, last.step,
                          f"the step counts {last.count} messages but the lines up to it hold {len(messages)}")
        return ThreadSnapshot(StepRecord(thread_id, last.step, last.count, last.created_at, last.metadata), messages)

    def read(self, thread_id: str, step: int | None = None) -> ThreadSnapshot | None:
        """The thread as of ``step`` (default the latest), or ``None``; the file is read once."""
        check_thread_id(thread_id)
        lines = self._lines(thread_id)
        return None if lines is None else self._snapshot(thread_id, lines, step)

    def salvage(self, thread_id: str) -> ThreadSnapshot | None:
        """The steps before the first damaged line, as of the last of them (``None`` when none is readable)."""
        check_thread_id(thread_id)
        lines = self._lines(thread_id, strict=False)
        return None if lines is None else self._snapshot(thread_id, lines, None)

    def list_steps(self, thread_id: str) -> list[StepRecord]:
        """The thread's step records, oldest first."""
        check_thread_id(thread_id)
        lines = self._lines(thread_id) or []
        return [StepRecord(thread_id, ln.step, ln.count, ln.created_at, ln.metadata) for ln in lines]

    def list_threads(self) -> list[str]:
        """Threads whose log holds at least one complete line, sorted."""
        try:
            names = sorted(n for n in os.listdir(self.dir) if n.endswith(".jsonl"))
        except FileNotFoundError:
            return []
        threads = []
        for name in names:
            first = self._first_thread_id(self.dir / name)
            if first is not None:
                threads.append(first)
        return sorted(threads)

    @staticmethod
    def _first_thread_id(file: Path) -> str | None:
        try:
            with open(file, "rb") as fh:
                head = fh.read(4096)
        except FileNotFoundError:
            return None
        if b"\n" not in head and len(head) < 4096:
            return None  # only a torn first write
        match = re.search(rb',"thread_id":("(?:[^"\\]|\\.)*")', head)
        if match is None:
            return unquote(file.name[: -len(".jsonl")])
        return str(json.loads(match.group(1)))

    # ------------------------------------------------------------ removing
    def delete_thread(self, thread_id: str) -> None:
        """Remove the thread's log file."""
        file = self.file_for(thread_id)
        with self._files._locked(file, fcntl.LOCK_EX) as opened:
            if opened is None:
                return
            os.unlink(file)
            _fsync_dir(self.dir)
        with self._lock:
            self._ends.pop(file, None)

    def prune(self, thread_id: str, keep_last: int) -> int:
        """Merge the lines before the newest ``keep_last`` steps into the oldest kept one (atomic rename)."""
        check_keep_last(keep_last)
        file = self.file_for(thread_id)
        with self._files._locked(file, fcntl.LOCK_EX) as opened:
            if opened is None:
                return 0
            remove_stale_tmp(self.dir, file.name)
            lines, _ = scan_log(_read_all(opened[0]), file, thread_id)
            gone = len(lines) - keep_last
            if gone <= 0:
                return 0
            merged, kept = lines[: gone + 1], lines[gone + 1:]
            out = [self._line_of(thread_id, merged[-1], [m for ln in merged for m in ln.messages])]
            out += [self._line_of(thread_id, ln, ln.messages) for ln in kept]
            tmp = file.with_name(f".{file.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                _write_all(fd, b"".join(out), 0)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, file)
            _fsync_dir(self.dir)
        with self._lock:
            self._ends.pop(file, None)
        return gone

    @staticmethod
    def _line_of(thread_id: str, line: LogLine, messages: list[Any]) -> bytes:
        texts = [json.dumps(m, ensure_ascii=False, separators=(",", ":")) for m in messages]
        meta = json.dumps(line.metadata, ensure_ascii=False, separators=(",", ":"))
        return encode_log_line(thread_id, line.step, line.count, line.created_at, meta, texts)

    def expire(self, idle_before: str) -> list[str]:
        """Delete every thread whose latest step is older than ``idle_before`` (reads each log's last line)."""
        idle = []
        for thread in self.list_threads():
            steps = self.list_steps(thread)
            if steps and steps[-1].created_at < idle_before:
                self.delete_thread(thread)
                idle.append(thread)
        return sorted(idle)

    def close(self) -> None:
        """Nothing stays open between calls."""
