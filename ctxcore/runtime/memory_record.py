"""A thread that records into long-term memory (``memory: record:``), so facts outlive the thread.

When the pipeline's ``memory:`` step has a ``record:`` section
(:class:`ctxcore.pipeline.spec.MemoryRecordSpec`), :meth:`Thread.save` hands
the messages it just saved, and the summaries compaction made in the turn's
builds, to :func:`record_turn`, which records each selected one as one memory
through the store's ordinary ``record`` call. Off by default: what to
remember is otherwise the agent's decision (the memory tools).

Invariants: only acknowledged messages are recorded (after the save
returned), each at most once per thread object and under an id derived from
the message, so saving the same summary again replaces its memory instead of
adding a copy; a memory is at most ``max_chars`` characters; a store error is
raised with a note that the turn itself was saved. Recorded text keeps its
trust in the metadata; memories come back as untrusted text whatever it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ctxcore.model.messages import Message

__all__ = ["SUMMARY_STAGES", "record_turn", "summaries_of"]

#: compaction stages whose output is a summary (``metadata["ctxcore.compaction"]["stage"]``).
SUMMARY_STAGES = frozenset({"summarize", "consolidate"})
_COMPACTION_META = "ctxcore.compaction"


def summaries_of(messages: Iterable[Message]) -> list[Message]:
    """The summary messages a compaction step put into a build's output."""
    out = []
    for m in messages:
        info = m.metadata.get(_COMPACTION_META)
        if isinstance(info, dict) and info.get("stage") in SUMMARY_STAGES:
            out.append(m)
    return out


def _kind(m: Message, spec: Any, summaries: set[str]) -> str | None:
    if m.id in summaries:
        return "summary" if spec.summaries else None
    if m.role == "user" and spec.user_turns:
        return "user_turn"
    if m.role == "tool" and spec.tool_results:
        return "tool_result"
    return None


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def record_turn(store: Any, spec: Any, thread_id: str, saved: Sequence[Message], summaries: Sequence[Message],
                done: set[str]) -> int:
    """Record the selected messages of a saved turn into ``store``; return how many memories were written.

    ``done`` holds the ids already recorded by this thread object and is
    updated, so a summary replayed on every build is recorded once.
    """
    summary_ids = {m.id for m in summaries}
    written = 0
    for m in [*saved, *summaries]:
        kind = _kind(m, spec, summary_ids)
        if kind is None or m.id in done:
            continue
        text = m.text.strip()
        if not text:
            continue
        metadata = {"source": "thread", "kind": kind, "thread_id": thread_id, "message_id": m.id, "trust": m.trust}
        kw: dict[str, Any] = {"namespace": spec.namespace, "metadata": metadata}
        if spec.ids:
            kw["id"] = f"{thread_id}:{m.id}"
        store.record(_cut(text, spec.max_chars), **kw)
        done.add(m.id)
        written += 1
    return written
