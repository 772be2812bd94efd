"""The jsonl checkpoint file format: one checksummed, numbered record per line.

A line is a JSON object whose first two keys are fixed, so the checksum covers
the exact bytes of the record without re-serialising it::

    {"crc":"1a2b3c4d","seq":7,"record":{"thread_id":"t1","step":12,...}}\\n

``crc`` is the CRC-32 of ``b"<seq>:" + <record bytes>``. Sequence numbers grow by
one per line. :func:`scan` splits a file into its valid records and the damaged
bytes after the last of them (a torn tail, ignored on read and cut off by the
next writer); invalid bytes *before* a valid record, or a damaged tail holding
more than one record, raise ``CheckpointCorrupt``.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

from ctxcore import CheckpointCorrupt
from ctxcore.kit import EncodedCheckpoint

__all__ = ["encode_line", "scan", "Scan", "LineRef", "parse_record", "record_step"]

_START = b'{"crc":"'
_PREFIX = re.compile(rb'\{"crc":"([0-9a-f]{8})","seq":(0|[1-9][0-9]{0,18}),"record":')


def encode_line(seq: int, enc: EncodedCheckpoint) -> bytes:
    """The complete line (newline included) storing ``enc`` as record number ``seq``."""
    head = json.dumps({"thread_id": enc.thread_id, "step": enc.step, "created_at": enc.created_at}, ensure_ascii=False, separators=(",", ":"))
    body = (
        f'{head[:-1]},"state_dump":{enc.state_json},"tree_state":{enc.tree_json},'
        f'"runtime_metadata":{enc.metadata_json}}}'
    ).encode()
    crc = zlib.crc32(b"%d:" % seq + body)
    return b'{"crc":"%08x","seq":%d,"record":' % (crc, seq) + body + b"}\n"


@dataclass(frozen=True)
class LineRef:
    """Where a valid record sits in the file: byte range of its body and its numbers."""

    start: int
    end: int  # offset just past the newline
    seq: int
    body_start: int
    body_end: int


@dataclass
class Scan:
    """Result of scanning a file: its valid records and where the valid part ends."""

    records: list[LineRef] = field(default_factory=list)
    valid_end: int = 0
    size: int = 0

    @property
    def last(self) -> LineRef | None:
        """The newest valid record, if any."""
        return self.records[-1] if self.records else None

    @property
    def torn(self) -> bool:
        """Whether damaged bytes follow the last valid record."""
        return self.size > self.valid_end


def _check_line(data: bytes, start: int, end: int) -> tuple[int, int, int] | None:
    """(seq, body_start, body_end) if ``data[start:end]`` (newline excluded) is a valid record."""
    m = _PREFIX.match(data, start, end)
    if m is None or end - m.end() < 1 or data[end - 1] != 0x7D:  # b"}"
        return None
    seq = int(m.group(2))
    body_start, body_end = m.end(), end - 1
    if zlib.crc32(data[body_start:body_end], zlib.crc32(b"%d:" % seq)) != int(m.group(1), 16):
        return None
    return seq, body_start, body_end


def _complete_record_in(data: bytes, start: int) -> int | None:
    """Offset of the first record at or after ``start`` that verifies up to its newline, if any."""
    pos = data.find(_START, start)
    while pos >= 0:
        nl = data.find(b"\n", pos)
        if nl < 0:
            return None
        if _check_line(data, pos, nl) is not None:
            return pos
        pos = data.find(_START, pos + 1)
    return None


def scan(data: bytes, *, file: str, base: int = 0, prev_seq: int | None = None) -> Scan:
    """Check every line of ``data`` (the file's bytes from offset ``base``).

    Args:
        file: named in errors.
        base: file offset of ``data[0]`` (writers scan only what was appended since
            their last write).
        prev_seq: sequence number of the record just before ``base``, if any.

    Raises:
        CheckpointCorrupt: damaged bytes or a broken sequence before a valid record.
    """
    result = Scan(valid_end=base, size=base + len(data))
    damage_at: int | None = None
    pos, n = 0, len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break  # an unterminated last line is a torn write
        checked = _check_line(data, pos, nl)
        if checked is None:
            if damage_at is None:
                damage_at = pos
        else:
            seq, body_start, body_end = checked
            if damage_at is not None:
                raise CheckpointCorrupt(
                    f"{file}: damaged bytes at offset {base + damage_at} before the valid record at offset {base + pos} "
                    f"(seq {seq}); only a torn last record is repaired automatically — restore the file from a backup, "
                    f"or cut it at offset {base + damage_at} to knowingly fall back to older checkpoints"
                )
            if prev_seq is not None and seq != prev_seq + 1:
                raise CheckpointCorrupt(
                    f"{file}: record at offset {base + pos} has seq {seq}, expected {prev_seq + 1}: records are missing or "
                    f"were reordered — restore the file from a backup"
                )
            prev_seq = seq
            result.records.append(LineRef(base + pos, base + nl + 1, seq, base + body_start, base + body_end))
            result.valid_end = base + nl + 1
        pos = nl + 1
    tail_at = result.valid_end - base
    complete = _complete_record_in(data, tail_at)
    if complete is not None:
        # A torn write leaves at most a partial last record; a record that verifies
        # after damaged bytes means the damage is not at the end of the file.
        raise CheckpointCorrupt(
            f"{file}: damaged bytes at offset {result.valid_end} before the valid record at offset {base + complete}; "
            f"only a torn last record is repaired automatically — restore the file from a backup, or cut it at "
            f"offset {result.valid_end} to knowingly fall back to older checkpoints"
        )
    starts = data.count(_START, tail_at)
    if starts > 1:
        # A crash tears at most one record (the last write); several record starts in
        # the damaged tail mean earlier records lost their line breaks or checksums.
        raise CheckpointCorrupt(
            f"{file}: the damaged bytes after offset {result.valid_end} hold {starts} records; only a torn last "
            f"record is repaired automatically — restore the file from a backup, or cut it at offset "
            f"{result.valid_end} to knowingly fall back to older checkpoints"
        )
    return result


def parse_record(data: bytes, ref: LineRef, *, file: str, base: int = 0, thread_id: str | None = None) -> dict[str, Any]:
    """Decode the record ``ref`` points at into the checkpoint dict ``get_checkpoint`` returns."""
    raw = data[ref.body_start - base : ref.body_end - base]
    try:
        rec = json.loads(raw.decode("utf-8"))
        tid, step, created = rec["thread_id"], rec["step"], rec["created_at"]
        if not isinstance(tid, str) or not isinstance(step, int) or not isinstance(created, str):
            raise TypeError("thread_id, step or created_at has the wrong type")
        if thread_id is not None and tid != thread_id:
            raise ValueError(f"record belongs to thread {tid!r}, not {thread_id!r}")
        out = {
            "thread_id": tid,
            "step": step,
            "state_dump": rec["state_dump"],
            "tree_state": rec["tree_state"],
            "runtime_metadata": rec["runtime_metadata"],
            "created_at": created,
        }
    except (ValueError, KeyError, TypeError) as exc:
        # The checksum matched, so the writer itself wrote this: not a torn write.
        raise CheckpointCorrupt(f"{file}: record at offset {ref.start} (seq {ref.seq}) is not a valid checkpoint: {exc}") from exc
    return out


_STEP = re.compile(rb',"step":(0|[1-9][0-9]{0,18}),"created_at":')


def record_step(data: bytes, ref: LineRef, *, file: str, base: int = 0) -> int:
    """The step of record ``ref`` without decoding its state (writers need only that)."""
    # The thread id before it is a JSON string, which cannot hold an unescaped quote,
    # so the first match is the record's own "step" key.
    m = _STEP.search(data, ref.body_start - base, ref.body_end - base)
    if m is None:
        raise CheckpointCorrupt(f"{file}: record at offset {ref.start} (seq {ref.seq}) has no step")
    return int(m.group(1))
