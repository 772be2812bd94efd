"""Memory providers: ``memory_file``, ``memory_recall``, ``recent_memory``, ``archived_summary``.

All four carry remembered text, which is untrusted by default (DESIGN: memory is
untrusted): each emits a protected user-role block that says it is data, not
instructions. ``trust: trusted`` turns it into a system message, for setups
where the memory is the operator's own (the agent preset does this).
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ctxcore import Message
from ctxcore.kit import current_pipeline_context, memory_span
from ctxcore_providers._files import (
    DEFAULT_MAX_BYTES,
    FileRefused,
    RenderCache,
    confined_file,
    read_text,
)
from ctxcore_providers._markers import neutralize_markers
from ctxcore_providers._render import Trust, context_message, estimate_tokens

#: the MEMORY.md an agent starts with; memory_file emits nothing while the file still equals it.
MEMORY_TEMPLATE = """# Long-term Memory

This file stores important information that should persist across sessions.

## User Information

(Important facts about the user)

## Preferences

(User preferences learned over time)

## Important Notes

(Things to remember)
"""

TRUNCATED = "\n... (truncated)"


# ------------------------------------------------------------------ memory_file
class MemoryFileConfig(BaseModel):
    """Options of the ``memory_file`` provider."""

    model_config = ConfigDict(extra="forbid")

    workspace: str = Field(default=".", description="Root the file must resolve inside.")
    path: str = Field(default="memory/MEMORY.md", description="The memory file, relative to the workspace.")
    template: str | None = Field(default=None, description="Text treated as 'not customised' (default: the shipped template).")
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, gt=0)
    trust: Trust = "untrusted"
    ttl_seconds: float | None = Field(default=None, gt=0)
    priority: int = 60


class MemoryFile:
    """``# Memory\\n\\n## Long-term Memory\\n{content}`` when MEMORY.md differs from the template."""

    def __init__(self, config: MemoryFileConfig) -> None:
        self.config = config
        self.root = Path(config.workspace).expanduser().resolve()
        self.template = (config.template if config.template is not None else MEMORY_TEMPLATE).strip()
        self.cache: RenderCache[tuple[Message, ...]] = RenderCache(ttl=config.ttl_seconds)

    def _render(self) -> tuple[tuple[Message, ...], list[Path]]:
        deps = [self.root / self.config.path]
        path = confined_file(self.root, self.config.path, max_bytes=self.config.max_bytes)
        if path is None:
            return (), deps
        try:
            content = read_text(path, roots=[self.root], max_bytes=self.config.max_bytes).strip()
        except FileNotFoundError:  # removed since it was found
            return (), deps
        if not content or content == self.template:
            return (), deps
        text = f"# Memory\n\n## Long-term Memory\n{content}"
        return (context_message(text, source_label="long-term memory", trust=self.config.trust,
                                priority=self.config.priority, kind="memory_file"),), deps

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """The memory block, or nothing for a missing or uncustomised file."""
        return self.cache.get(self._render)


# ---------------------------------------------------------------- memory_recall
class MemoryRecallConfig(BaseModel):
    """Options of the ``memory_recall`` provider."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    limit: int = Field(default=5, gt=0, description="Most items retrieved.")
    namespace: str | tuple[str, ...] | None = Field(
        default=None,
        description="Namespace passed to retrieve, a string or a list of segments ([user, '42'] is 'user/42'); "
        "runtime['memory_namespace'] overrides.",
    )
    input_key: str = Field(default="input", description="State key of the current user message (the query).")
    state_key: str = Field(default="messages", description="History key; its last user message is the query when input is absent.")
    # A YAML file can only leave it null: the JSON Schema says so (`ctx pipeline schema`).
    store: Any = Field(default=None, description="A MemoryStore object (Python only); default: the pipeline's memory store.",
                       json_schema_extra={"type": "null"})
    heading: str = Field(default="# Recalled Memory", description="First line of the block.")
    ttl_seconds: float | None = Field(
        default=None, gt=0,
        description="Reuse the block recalled for the same query and namespace for this long (no store call); "
        "default: retrieve on every build.",
    )

    @field_validator("store")
    @classmethod
    def _store(cls, value: Any) -> Any:
        if value is not None and not callable(getattr(value, "retrieve", None)):
            raise ValueError("store must implement the MemoryStore protocol (retrieve, format_retrieved)")
        return value


def current_user_text(state: Mapping[str, Any], input_key: str, state_key: str) -> str:
    """The current user message's text: ``state[input_key]``, else the last user message of the history."""
    value = state.get(input_key)
    if isinstance(value, str):
        return value
    if isinstance(value, Message):
        return value.text
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])
    for item in reversed(state.get(state_key) or ()):
        if isinstance(item, Message) and item.role == "user":
            return item.text
        if isinstance(item, Mapping) and item.get("role") == "user" and isinstance(item.get("content"), str):
            return str(item["content"])
    return ""


NO_STORE = "memory_recall needs a memory store: add a 'memory:' step to the pipeline (or pass store=)"


class MemoryRecall:
    """Queries the long-term memory store with the current user message; renders an untrusted block."""

    def __init__(self, config: MemoryRecallConfig, store_getter: Callable[[], Any] | None = None) -> None:
        self.config = config
        context = current_pipeline_context()
        if config.store is None and store_getter is None and context.has_memory is False:
            raise ValueError(NO_STORE)  # found when the pipeline compiles (`ctx pipeline validate`), not at the first build
        self._get_store = (lambda: config.store) if config.store is not None else (store_getter or context.memory)
        self._clock: Callable[[], float] = time.monotonic
        self._recalled: OrderedDict[tuple[Any, str], tuple[float, tuple[Message, ...]]] = OrderedDict()

    def _cached(self, key: tuple[Any, str]) -> tuple[Message, ...] | None:
        """The block recalled for ``key`` less than ``ttl_seconds`` ago, if any."""
        if self.config.ttl_seconds is None:
            return None
        hit = self._recalled.get(key)
        if hit is None or self._clock() - hit[0] >= self.config.ttl_seconds:
            return None
        return hit[1]

    def _keep(self, key: tuple[Any, str], messages: tuple[Message, ...]) -> tuple[Message, ...]:
        if self.config.ttl_seconds is not None:
            self._recalled[key] = (self._clock(), messages)
            self._recalled.move_to_end(key)
            while len(self._recalled) > 128:  # a handful of live conversations per provider; never unbounded
                self._recalled.popitem(last=False)
        return messages

    def _store(self) -> Any:
        store = self._get_store()
        if store is None:
            raise ValueError(NO_STORE)
        return store

    def _query(self, state: Mapping[str, Any]) -> str:
        return current_user_text(state, self.config.input_key, self.config.state_key).strip()

    def _render(self, store: Any, items: Sequence[Any]) -> tuple[Message, ...]:
        if not items:
            return ()
        text = neutralize_markers(str(store.format_retrieved(items)).strip())
        if not text:
            return ()
        return (context_message(f"{self.config.heading}\n\n{text}", source_label="recalled memory", trust="untrusted",
                                priority=40, kind="memory_recall"),)

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """The recalled items for the current message (nothing without a query or results)."""
        query = self._query(state)
        if not query:
            return ()
        namespace = runtime.get("memory_namespace") or self.config.namespace
        cached = self._cached((namespace, query))
        if cached is not None:
            return cached
        store = self._store()
        with memory_span("search_memory", store, namespace, query=query) as traced:
            items = list(store.retrieve(query, limit=self.config.limit, namespace=namespace) or ())
            traced.result(items)
        return self._keep((namespace, query), self._render(store, list(items or ())))

    async def aget_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """Like :meth:`get_messages`, awaiting ``aretrieve`` when the store has it."""
        query = self._query(state)
        if not query:
            return ()
        namespace = runtime.get("memory_namespace") or self.config.namespace
        cached = self._cached((namespace, query))
        if cached is not None:
            return cached
        store = self._store()
        aretrieve = getattr(store, "aretrieve", None)
        with memory_span("search_memory", store, namespace, query=query) as traced:
            if aretrieve is not None:
                items = await aretrieve(query, limit=self.config.limit, namespace=namespace)
            else:
                items = store.retrieve(query, limit=self.config.limit, namespace=namespace)
            items = list(items or ())
            traced.result(items)
        return self._keep((namespace, query), self._render(store, list(items or ())))


# ---------------------------------------------------------------- recent_memory
class RecentMemoryConfig(BaseModel):
    """Options of the ``recent_memory`` provider."""

    model_config = ConfigDict(extra="forbid")

    workspace: str = Field(default=".", description="Root the log file must resolve inside.")
    path: str | None = Field(default="memory/history.jsonl", description="JSON-lines log: {cursor, timestamp, content} per line.")
    state_key: str | None = Field(default=None, description="Read entries from state[state_key] instead of the file.")
    cursor_key: str = Field(default="memory_cursor", description="State key of the cursor; entries with a larger cursor are shown.")
    max_entries: int = Field(default=50, gt=0)
    max_tokens: int = Field(default=8000, gt=0, description="Estimated tokens (4 characters each) before the cut.")
    max_bytes: int = Field(default=4 * 1024 * 1024, gt=0)
    trust: Trust = "untrusted"
    ttl_seconds: float | None = Field(default=None, gt=0, description="Re-read the log at least this often even when unchanged.")
    priority: int = 40


class RecentMemory:
    """Entries of the history log newer than the cursor: the newest ``max_entries``, at most ``max_tokens``."""

    def __init__(self, config: RecentMemoryConfig) -> None:
        self.config = config
        self.root = Path(config.workspace).expanduser().resolve()
        self.cache: RenderCache[list[dict[str, Any]]] = RenderCache(ttl=config.ttl_seconds)
        self._last: tuple[tuple[Any, ...], tuple[Message, ...]] | None = None

    def _read_log(self) -> tuple[list[dict[str, Any]], list[Path]]:
        assert self.config.path is not None
        deps = [self.root / self.config.path]
        path = confined_file(self.root, self.config.path, max_bytes=self.config.max_bytes)
        if path is None:
            return [], deps
        entries = []
        try:
            log_text = read_text(path, roots=[self.root], max_bytes=self.config.max_bytes)
        except FileNotFoundError:  # removed since it was found
            return [], deps
        for n, line in enumerate(log_text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not a JSON object: {exc.msg}") from None
            if not isinstance(entry, dict) or "content" not in entry:
                raise ValueError(f"{path}:{n}: each line needs a 'content' (and 'cursor')")
            entries.append(entry)
        return entries, deps

    def _entries(self, state: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
        if self.config.state_key is not None:
            raw = state.get(self.config.state_key) or []
            if not isinstance(raw, list):
                raise ValueError(f"state[{self.config.state_key!r}] must be a list of entries")
            return [e if isinstance(e, Mapping) else {"content": str(e), "cursor": i} for i, e in enumerate(raw)]
        if self.config.path is None:
            return []
        return self.cache.get(self._read_log)

    def render(self, entries: Sequence[Mapping[str, Any]], cursor: int | None) -> str:
        """The text for ``entries`` after ``cursor``: newest ``max_entries``, cut at ``max_tokens``."""
        newer = [e for e in entries if cursor is None or int(e.get("cursor", 0)) > cursor][-self.config.max_entries:]
        lines: list[str] = []
        used = 0
        for e in newer:
            stamp = f"[{e['timestamp']}] " if e.get("timestamp") else ""
            line = f"- {stamp}{' '.join(str(e.get('content', '')).split())}"
            cost = estimate_tokens(line) + 1
            if used + cost > self.config.max_tokens:
                return "\n".join(lines) + TRUNCATED
            lines.append(line)
            used += cost
        return "\n".join(lines)

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """The recent-history block, or nothing when no entry is newer than the cursor."""
        entries = self._entries(state)
        raw_cursor = state.get(self.config.cursor_key)
        cursor = int(raw_cursor) if raw_cursor is not None else None
        key = (id(entries), len(entries), cursor)
        if self._last is not None and self._last[0] == key and self.config.state_key is None:
            return self._last[1]
        body = self.render(entries, cursor)
        out: tuple[Message, ...] = ()
        if body:
            out = (context_message(f"# Recent History\n\n{neutralize_markers(body)}", source_label="memory history",
                                   trust=self.config.trust, priority=self.config.priority, kind="recent_memory"),)
        self._last = (key, out)
        return out


# ------------------------------------------------------------- archived_summary
class ArchivedSummaryConfig(BaseModel):
    """Options of the ``archived_summary`` provider."""

    model_config = ConfigDict(extra="forbid")

    state_key: str = Field(default="archived_summary", description="State key of the summary text.")
    trust: Trust = Field(default="untrusted", description="A summary of untrusted history is itself untrusted.")
    priority: int = 40


class ArchivedSummary:
    """``[Archived Context Summary]\\n\\n{summary}`` from the state."""

    def __init__(self, config: ArchivedSummaryConfig) -> None:
        self.config = config
        self._last: tuple[str, tuple[Message, ...]] | None = None

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """The summary block, or nothing when the state has none."""
        summary = state.get(self.config.state_key)
        if summary is None or (isinstance(summary, str) and not summary.strip()):
            return ()
        if not isinstance(summary, str):
            raise ValueError(f"state[{self.config.state_key!r}] must be a string, not {type(summary).__name__}")
        if self._last is not None and self._last[0] == summary:
            return self._last[1]
        text = f"[Archived Context Summary]\n\n{neutralize_markers(summary.strip())}"
        out = (context_message(text, source_label="archived summary", trust=self.config.trust,
                               priority=self.config.priority, kind="archived_summary"),)
        self._last = (summary, out)
        return out


__all__ = [
    "MEMORY_TEMPLATE", "MemoryFile", "MemoryFileConfig", "MemoryRecall", "MemoryRecallConfig",
    "RecentMemory", "RecentMemoryConfig", "ArchivedSummary", "ArchivedSummaryConfig",
    "current_user_text", "FileRefused",
]
