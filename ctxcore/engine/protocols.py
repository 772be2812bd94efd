"""The contracts of the five component kinds (plus the summarizer later issues use).

They are typing Protocols: any object with the right methods takes part; nothing
has to inherit from ctxcore. Async variants are optional; the builder uses them
when present (``abuild``) and otherwise calls the sync method.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ctxcore.model.messages import Message

if TYPE_CHECKING:  # pragma: no cover
    from ctxcore.engine.budget import FilterContext
    from ctxcore.model.memory_item import MemoryItem

__all__ = [
    "Provider",
    "AsyncProvider",
    "Filter",
    "TokenCounter",
    "Checkpointer",
    "AsyncCheckpointer",
    "MemoryStore",
    "AsyncMemoryStore",
    "Summarizer",
]

State = Mapping[str, Any]
Runtime = Mapping[str, Any]


@runtime_checkable
class Provider(Protocol):
    """Contributes messages to the context, in pipeline order."""

    def get_messages(self, state: State, runtime: Runtime) -> Sequence[Message]:
        """Return this provider's messages for the given state and runtime values."""
        ...


@runtime_checkable
class AsyncProvider(Protocol):
    """A provider doing I/O; ``abuild`` awaits ``aget_messages`` when present."""

    async def aget_messages(self, state: State, runtime: Runtime) -> Sequence[Message]:
        """Async form of :meth:`Provider.get_messages`."""
        ...


@runtime_checkable
class Filter(Protocol):
    """Enforces a rule on the aggregated messages: drops, compresses or reorders."""

    def apply(self, messages: Sequence[Message], ctx: FilterContext) -> Sequence[Message]:
        """Return the messages to keep; ``ctx`` carries the counter, budget, runtime and report."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """Measures text and messages in the tokens of one tokenizer."""

    name: str

    def count_text(self, text: str) -> int:
        """Tokens of a bare string."""
        ...

    def count_message(self, message: Message) -> int:
        """Tokens of one message, including its per-message overhead."""
        ...

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Tokens of a whole request's messages, including reply priming."""
        ...

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Tokens of a list of JSON-schema tool definitions."""
        ...


@runtime_checkable
class Checkpointer(Protocol):
    """Persists thread state so a run can resume."""

    def save_checkpoint(
        self,
        thread_id: str,
        step: int,
        state_dump: dict[str, Any],
        tree_state: dict[str, Any] | None = None,
        runtime_metadata: dict[str, Any] | None = None,
    ) -> None:
        """Durably store the state of ``thread_id`` at ``step``.

        ``step`` must be newer than the thread's latest stored step (else ``StaleWrite``);
        values that JSON cannot return exactly are refused before anything is written.
        """
        ...

    def get_checkpoint(self, thread_id: str) -> dict[str, Any] | None:
        """The latest checkpoint of the thread, or ``None``.

        A dict with ``thread_id``, ``step``, ``state_dump``, ``tree_state``,
        ``runtime_metadata`` and ``created_at`` (ISO 8601 UTC).
        """
        ...

    def list_threads(self) -> list[str]:
        """Every thread with at least one checkpoint."""
        ...

    def list_checkpoints(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's checkpoints, oldest first."""
        ...

    def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint of the thread."""
        ...

    def prune(self, thread_id: str, keep_last: int) -> int:
        """Keep the newest ``keep_last`` checkpoints; return how many were removed."""
        ...


@runtime_checkable
class AsyncCheckpointer(Protocol):
    """Async variants of the checkpointer calls likely to do I/O."""

    async def asave_checkpoint(
        self,
        thread_id: str,
        step: int,
        state_dump: dict[str, Any],
        tree_state: dict[str, Any] | None = None,
        runtime_metadata: dict[str, Any] | None = None,
    ) -> None:
        """Async form of :meth:`Checkpointer.save_checkpoint`."""
        ...

    async def aget_checkpoint(self, thread_id: str) -> dict[str, Any] | None:
        """Async form of :meth:`Checkpointer.get_checkpoint`."""
        ...

    async def alist_threads(self) -> list[str]:
        """Async form of :meth:`Checkpointer.list_threads`."""
        ...

    async def alist_checkpoints(self, thread_id: str) -> list[dict[str, Any]]:
        """Async form of :meth:`Checkpointer.list_checkpoints`."""
        ...

    async def adelete_thread(self, thread_id: str) -> None:
        """Async form of :meth:`Checkpointer.delete_thread`."""
        ...

    async def aprune(self, thread_id: str, keep_last: int) -> int:
        """Async form of :meth:`Checkpointer.prune`."""
        ...


@runtime_checkable
class MemoryStore(Protocol):
    """Long-term memory: record facts, retrieve the relevant ones later.

    Items are :class:`ctxcore.model.memory_item.MemoryItem`; a namespace (one user or
    agent, ``None`` for ``"default"``) isolates them. See docs/memory.md.
    """

    def record(self, inputs: Any, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """Store ``inputs`` (text or messages) under ``namespace``; ``metadata=``, ``id=`` (upsert)."""
        ...

    def retrieve(self, query: str, limit: int = 5, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """The ``limit`` items of ``namespace`` most relevant to ``query``, best first; ``filters=``."""
        ...

    def format_retrieved(self, items: Sequence[MemoryItem]) -> str:
        """Render retrieved items as text for the prompt."""
        ...

    def delete(self, item: Any, namespace: str | tuple[str, ...] | None = None) -> None:
        """Remove an item (a MemoryItem or its id) from ``namespace``; unknown ids are ignored."""
        ...


@runtime_checkable
class AsyncMemoryStore(Protocol):
    """Async variants of the memory calls."""

    async def arecord(self, inputs: Any, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """Async form of :meth:`MemoryStore.record`."""
        ...

    async def aretrieve(self, query: str, limit: int = 5, namespace: str | tuple[str, ...] | None = None, **kw: Any) -> list[MemoryItem]:
        """Async form of :meth:`MemoryStore.retrieve`."""
        ...

    async def adelete(self, item: Any, namespace: str | tuple[str, ...] | None = None) -> None:
        """Async form of :meth:`MemoryStore.delete`."""
        ...


@runtime_checkable
class Summarizer(Protocol):
    """Condenses a span of messages; declares how many model calls it may make.

    ``max_calls`` is the most model calls it may make in one build (0 for a
    summarizer that needs no model); callers check it before asking.
    """

    max_calls: int

    def summarize(self, messages: Sequence[Message], target_tokens: int) -> str:
        """A summary of ``messages`` of about ``target_tokens`` tokens."""
        ...
