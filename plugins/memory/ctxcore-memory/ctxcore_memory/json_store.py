"""``json``: SimpleStore, every namespace's memories in one JSON file.

Made for small stores (hundreds to a few thousand memories) that a person may
want to read or edit. Each write reads the file, changes it and writes a new
copy to a temporary file in the same directory, fsyncs it and atomically
renames it over the old one (then fsyncs the directory), all under an
exclusive ``flock`` on a sidecar ``<file>.lock``. A crash therefore leaves
either the old or the new file, and several processes adding at once lose
nothing. Reads need no lock: a rename is atomic, so a reader sees one complete
version. Network file systems are not supported (flock is unreliable there).

Ranking is deliberately simple: a memory containing the whole query as a
substring comes first, then memories by how many distinct query words they
share; ties go to the newer memory.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import MemoryCorrupt, MemoryItem
from ctxcore.kit import (
    MemoryStoreBase,
    canonical_json,
    check_record,
    check_retrieve,
    item_id,
    resolve_namespace,
    tokenize,
)
from ctxcore_memory._files import make_parent_dir

__all__ = ["JsonStoreConfig", "JsonMemoryStore", "FORMAT"]

#: the ``format`` marker at the top of every file this store writes.
FORMAT = "ctxcore-memory-json"
_VERSION = 1

Data = dict[str, dict[str, dict[str, Any]]]


class JsonStoreConfig(BaseModel):
    """Options of the ``json`` memory store."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(default=".ctx/memory.json", description="The JSON file (created on first write, with its directory).")
    lock_timeout: float = Field(default=30.0, gt=0, description="Seconds to wait for another process's write before failing.")


class JsonMemoryStore(MemoryStoreBase):
    """Memories in one JSON file: ``{"format", "version", "namespaces": {ns: {id: memory}}}``."""

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.lock_timeout = lock_timeout
        # Parsed file, reused while the file on disk is the same one (replace => new inode).
        self._cache: tuple[tuple[int, int, int], Data] | None = None

    # ------------------------------------------------------------- file I/O
    def _load(self) -> Data:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return {}
        key = (st.st_ino, st.st_mtime_ns, st.st_size)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        try:
            raw = self.path.read_bytes()
            doc = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise MemoryCorrupt(f"{self.path}: not a JSON memory file ({exc}); restore it from a backup or move it away") from None
        data = _validate(doc, self.path)
        self._cache = (key, data)
        return data

    def _write(self, data: Data) -> None:
        doc = {"format": FORMAT, "version": _VERSION, "namespaces": data}
        payload = json.dumps(doc, ensure_ascii=False, indent=1, sort_keys=True).encode("utf-8")
        make_parent_dir(self.path, "json")
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        _fsync_dir(self.path.parent)
        self._cache = None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[Data]:
        """Exclusive read-modify-write: yields a copy of the data, written back on success."""
        make_parent_dir(self.path, "json")
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self._acquire(fd)
            self._remove_stale_temp_files()
            data = json.loads(json.dumps(self._load()))  # a private copy: the cache stays as on disk
            yield data
            self._write(data)
        finally:
            os.close(fd)  # closing releases the flock

    def _remove_stale_temp_files(self) -> None:
        """Delete temp files of writers killed mid-write (only a lock holder writes one, so any found now is stale)."""
        for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()

    def _acquire(self, fd: int) -> None:
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{self.lock_path}: another process held the lock for {self.lock_timeout}s "
                                       "(raise lock_timeout, or find the stuck process)") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)

    # ------------------------------------------------------------- contract
    def record(self, inputs: Any, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """Store ``inputs`` as one memory; ``metadata=`` labels it, ``id=`` replaces that memory."""
        item = check_record("json", inputs, namespace, kw)
        ns, text, metadata, memory_id = item.namespace, item.content, item.metadata, item.id
        with self._locked() as data:
            data.setdefault(ns, {})[memory_id] = {
                "content": text, "metadata": metadata, "created_at": item.created_at.isoformat(),
            }
        return [item]

    def retrieve(self, query: str, limit: int = 5, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """Substring matches first, then memories by shared query words; ``filters=`` match metadata."""
        text, limit, ns, filters = check_retrieve("json", query, limit, namespace, kw)
        text = text.lower()
        words = set(tokenize(text))
        phrase = text.strip()
        scored: list[tuple[float, str, str, dict[str, Any]]] = []
        for mid, rec in self._load().get(ns, {}).items():
            metadata = rec["metadata"]
            if any(k not in metadata or canonical_json(metadata[k]) != v for k, v in filters.items()):
                continue
            haystack = (rec["content"] + " " + _metadata_text(metadata)).lower()
            if phrase in haystack:
                score = float(len(words) + 1)
            else:
                score = float(len(words & set(tokenize(haystack))))
                if score == 0:
                    continue
            scored.append((score, rec["created_at"], mid, rec))
        scored.sort(key=lambda s: (-s[0], _neg_time(s[1]), s[2]))
        return [_item(mid, rec, ns, score) for score, _, mid, rec in scored[:limit]]

    def delete(self, item: Any, namespace: str | tuple[str, ...] | None = None) -> None:
        """Remove the memory from ``namespace``; an unknown id changes nothing."""
        memory_id = item_id(item)
        ns = resolve_namespace(namespace)
        if memory_id not in self._load().get(ns, {}):
            return
        with self._locked() as data:
            data.get(ns, {}).pop(memory_id, None)
            if ns in data and not data[ns]:
                del data[ns]

    def all_items(self, namespace: str | tuple[str, ...] | None = None) -> list[MemoryItem]:
        """Every memory of ``namespace``, oldest first (for inspection and tests)."""
        ns = resolve_namespace(namespace)
        records = self._load().get(ns, {})
        return sorted((_item(mid, rec, ns, None) for mid, rec in records.items()), key=lambda i: (i.created_at, i.id))


def _neg_time(iso: str) -> float:
    return -datetime.fromisoformat(iso).timestamp()


def _metadata_text(metadata: dict[str, Any]) -> str:
    return " ".join(f"{k} {v if isinstance(v, str) else canonical_json(v)}" for k, v in metadata.items())


def _item(mid: str, rec: dict[str, Any], ns: str, score: float | None) -> MemoryItem:
    # A deep copy: nested metadata must not share lists or dicts with the parse cache.
    return MemoryItem(id=mid, content=rec["content"], metadata=copy.deepcopy(rec["metadata"]), namespace=ns,
                      created_at=datetime.fromisoformat(rec["created_at"]), score=score)


def _validate(doc: Any, path: Path) -> Data:
    """The namespaces of a parsed file, or MemoryCorrupt naming what is wrong."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise MemoryCorrupt(f"{path}: not a ctxcore JSON memory file (no \"format\": \"{FORMAT}\" at the top)")
    if doc.get("version") != _VERSION:
        raise MemoryCorrupt(f"{path}: format version {doc.get('version')!r} is not supported (this ctxcore-memory reads {_VERSION})")
    namespaces = doc.get("namespaces")
    if not isinstance(namespaces, dict):
        raise MemoryCorrupt(f"{path}: \"namespaces\" must be an object")
    for ns, records in namespaces.items():
        if not isinstance(records, dict):
            raise MemoryCorrupt(f"{path}: namespaces[{ns!r}] must be an object of memories")
        for mid, rec in records.items():
            if not (isinstance(rec, dict) and isinstance(rec.get("content"), str)
                    and isinstance(rec.get("metadata"), dict) and isinstance(rec.get("created_at"), str)):
                raise MemoryCorrupt(f"{path}: namespaces[{ns!r}][{mid!r}] needs content, metadata and created_at")
            try:
                datetime.fromisoformat(rec["created_at"])
            except ValueError:
                raise MemoryCorrupt(f"{path}: namespaces[{ns!r}][{mid!r}].created_at is not an ISO 8601 time") from None
    return namespaces


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
