"""Threads: the turn loop over a thread log (``Pipeline.thread(thread_id)``).

A :class:`Thread` owns what every agent loop otherwise writes by hand: load the
conversation, append the user turn, build the request, append the model's reply
and the tool results, save. The conversation is a plain list of ctxcore
:class:`Message` objects that only ever grows by ``append``; every build hands
that same list to the pipeline as ``state["messages"]``, so the history provider
sees an append-only list and converts only the new tail (docs/threads.md).

Storage is the pipeline's thread store (``Pipeline.thread_store()``, a
:class:`ctxcore.kit.ThreadStore`): :meth:`Thread.save` appends only the messages
added since the last save plus one step record, fenced on the step this thread
was loaded or last saved at, so a second writer of the same thread (another
process, another ``Thread`` object) gets :class:`StaleWrite` and nothing is
written: reopen the thread and apply the turn again. A turn is acknowledged
when ``save`` returns. Input that could not be stored is refused by the
``add_*`` methods before anything is appended. Threads saved by older versions
as whole checkpoints (:data:`THREAD_FORMAT`) open and continue; their first
save converts them (:mod:`ctxcore.runtime.thread_migrate`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ctxcore.engine.builder import BuiltContext
from ctxcore.errors import InvalidHistory, StaleWrite
from ctxcore.kit.offload import DEFAULT_RETRIEVE_CHARS, resolve_handle, run_context_retrieve
from ctxcore.kit.threadlog import THREAD_LOG_FORMAT, ThreadSnapshot, encode_messages, extend_view, view_of
from ctxcore.model.anthropic_io import messages_from_anthropic
from ctxcore.model.messages import Message
from ctxcore.model.stored import stored_dump
from ctxcore.pipeline.spec import Pipeline, register_thread_factories
from ctxcore.runtime.memory_record import record_turn, summaries_of
from ctxcore.runtime.replies import applied_edits, message_from_reply
from ctxcore.runtime.thread_migrate import THREAD_FORMAT, legacy_thread, messages_of, saved_messages

__all__ = ["THREAD_FORMAT", "Thread", "aopen_thread", "open_thread", "saved_messages"]


class Thread:
    """One conversation: its messages, its checkpoint step and the pipeline that builds its requests.

    Create with :meth:`Pipeline.thread` (or ``await Pipeline.athread``), not directly.
    Methods are safe to call from several threads of one process; the store's
    step fence handles writers in other processes.
    """

    #: ``runtime_metadata["format"]`` of the whole-conversation checkpoints older versions wrote
    #: (:data:`THREAD_FORMAT`), for code that still reads or writes that format.
    FORMAT: ClassVar[str] = THREAD_FORMAT

    def __init__(
        self, pipeline: Pipeline, thread_id: str, store: Any, snapshot: ThreadSnapshot | None = None,
        *, state_key: str = "messages", tools: Sequence[Mapping[str, Any]] = (),
        legacy: tuple[int, list[Any]] | None = None, historic: bool = False,
    ) -> None:
        self.pipeline = pipeline
        self.thread_id = thread_id
        #: the thread store (``pipeline.thread_store()``) this thread is read from and saved to.
        self.store = store
        self.state_key = state_key
        #: tool definitions sent with every build (``state["tools"]``), e.g. OpenAI function tools.
        self.tools = [dict(t) for t in tools]
        self._lock = threading.RLock()
        self._messages: list[Message] = []  # append-only: the history provider relies on it
        self._unsaved: list[dict[str, Any]] = []  # the stored form of each message the log does not hold yet
        self._step: int | None = None
        self._expected: int | None = None  # the store's latest step when loaded or last saved (the fence)
        self._first_step = 0
        self._turn_runtime: dict[str, Any] = {}
        self._historic = historic  # opened at an older step: readable and forkable, never saved over
        self._view: list[list[int]] | None = None  # the step's view of the log (None: the whole prefix)
        self._summaries: dict[str, Message] = {}  # summaries built since the last save (memory: record: summaries)
        self._recorded: set[str] = set()  # ids this thread object recorded into long-term memory
        self._log_end = 0  # how many messages the log holds as of the loaded or last saved step
        self._edits: list[dict[str, Any]] = []  # Anthropic's applied_edits reported since the last save
        if snapshot is not None:
            shown, self._view = view_of(snapshot)
            self._messages.extend(messages_of(thread_id, snapshot.record.step, shown))
            self._step = self._expected = snapshot.record.step
            self._log_end = snapshot.record.messages
        elif legacy is not None:  # an older whole-checkpoint thread: the first save writes it all to the log
            self._messages.extend(messages_of(thread_id, *legacy))
            self._unsaved = list(legacy[1])
            self._step = legacy[0]
            self._first_step = self._step + 1
        self._saved = len(self._messages)

    # ------------------------------------------------------------ reading
    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation so far (saved and unsaved), oldest first."""
        with self._lock:
            return tuple(self._messages)

    @property
    def step(self) -> int | None:
        """The step this thread was loaded at or last saved as; ``None`` before the first save."""
        return self._step

    def steps(self) -> list[Any]:
        """Every saved step of this thread (``ctxcore.kit.StepRecord``), oldest first: open one with ``pipeline.thread(id, step=N)``."""
        return list(self.store.list_steps(self.thread_id))

    def fork(self, new_thread_id: str, *, step: int | None = None) -> Thread:
        """Copy this thread as saved at ``step`` (default: its current step) into ``new_thread_id``; return it opened.

        Raises:
            StaleWrite: ``new_thread_id`` already exists; nothing was written.
            ValueError: this thread has no saved step yet.
        """
        if step is None and self._expected is None:
            raise ValueError(f"thread {self.thread_id!r} has no saved step to fork; save() it first")
        step = self._step if step is None else step
        record = self.store.fork(self.thread_id, new_thread_id, step)
        meta = next((r.metadata for r in self.store.list_steps(self.thread_id) if r.step == step), None)
        view = meta.get("view") if isinstance(meta, dict) else None
        if view is not None:  # the copy shows what the source step showed (opening it checks the view)
            self.store.append(new_thread_id, [], expected_step=record.step, metadata=_step_metadata(view))
        return open_thread(self.pipeline, new_thread_id, state_key=self.state_key, tools=self.tools)

    @property
    def unsaved(self) -> int:
        """How many messages were appended since the last save (or load)."""
        return len(self._messages) - self._saved

    @property
    def pending_tool_calls(self) -> tuple[str, ...]:
        """Ids of the last assistant message's tool calls that have no result yet."""
        with self._lock:
            return tuple(self._pending())

    def resolve(self, handle: str) -> str:
        """The exact text of this thread's tool result that an ``offload`` step replaced with ``handle``.

        Only this thread's messages are searched: a handle from another thread
        names nothing here.

        Raises:
            KeyError: no tool result of this thread has that handle.
        """
        with self._lock:
            return resolve_handle(self._messages, handle, self.thread_id)

    def context_retrieve(self, arguments: Mapping[str, Any] | str | None, *, max_chars: int = DEFAULT_RETRIEVE_CHARS) -> str:
        """Run a ``context_retrieve`` tool call (its arguments as the model sent them): the text to add as its result.

        Returns up to ``max_chars`` characters of the offloaded result from the
        requested offset, with a note on where the rest starts; a wrong argument
        or an unknown handle gives an ``error: ...`` text the model can act on.
        """
        with self._lock:
            return run_context_retrieve(self._messages, arguments, self.thread_id, max_chars=max_chars)

    # ------------------------------------------------------------ the turn
    def add_user(self, content: str | Sequence[Any], **runtime: Any) -> Message:
        """Append a user message: text, or content blocks (ctxcore blocks, OpenAI parts or Anthropic blocks).

        ``runtime`` values (e.g. ``user_input=...``) are passed to the builds of
        this turn, merged under the ``runtime`` given to :meth:`build`.

        Raises:
            InvalidHistory: tool calls of the last reply are still unanswered.
            ValueError: the content is not a user message ctxcore understands.
        """
        message = _user_message(content)
        with self._lock:
            pending = self._pending()
            if pending:
                raise InvalidHistory(
                    f"thread {self.thread_id!r}: the last reply's tool calls {', '.join(pending)} have no result yet; "
                    "add them with add_tool_result before the next user message"
                )
            self._append(message)
            self._turn_runtime = dict(runtime)
        return message

    def build(self, runtime: Mapping[str, Any] | None = None) -> BuiltContext:
        """The pipeline's build over this thread's messages (``state[state_key]``)."""
        state, merged = self._build_args(runtime)
        return self._built(self.pipeline.build(state, merged))

    def add_response(self, response: Any) -> Message:
        """Append the model's reply: OpenAI chat completion (or its message), Responses API response, Anthropic Message; or their dicts.

        Text and tool calls are kept; Anthropic thinking blocks are kept
        byte-exact and sent back unchanged. The context edits an Anthropic
        reply reports (``context_management.applied_edits``) go into the next
        saved step's metadata (``"applied_edits"``). Returns the appended message.

        Raises:
            ValueError: the reply is none of the supported shapes (the output of
                ``responses.compact()`` included: use server-side compaction).
            InvalidHistory: tool calls of an earlier reply are still unanswered.
        """
        message = message_from_reply(response)
        edits = applied_edits(response)
        with self._lock:
            pending = self._pending()
            if pending:
                raise InvalidHistory(
                    f"thread {self.thread_id!r}: tool calls {', '.join(pending)} have no result yet; add them with "
                    "add_tool_result before the next reply"
                )
            self._append(message)
            self._edits += edits
        return message

    def add_tool_result(self, tool_call_id: str, content: str | Sequence[Any]) -> Message:
        """Append the result of a pending tool call (an untrusted ``tool`` message).

        Raises:
            InvalidHistory: no pending call has that id (nothing is appended).
        """
        with self._lock:
            pending = self._pending()
            if tool_call_id not in pending:
                known = f"pending: {', '.join(pending)}" if pending else "no tool call is pending"
                raise InvalidHistory(f"thread {self.thread_id!r}: no pending tool call has id {tool_call_id!r} ({known}); nothing was appended")
            blocks = tuple(content) if not isinstance(content, str) else content
            message = Message(role="tool", content=blocks, tool_call_id=tool_call_id)
            self._append(message)
        return message

    def save(self) -> int:
        """Append the messages added since the last save and one step record; return the step.

        The turn is acknowledged when this returns. Its cost follows the new
        messages, not the thread's length.

        Raises:
            StaleWrite: another writer saved this thread since it was loaded (or it was
                opened at an older step); nothing was written. Reopen the thread
                (``pipeline.thread(id)``) and apply the turn again.
        """
        with self._lock:
            if self._historic:
                raise StaleWrite(f"thread {self.thread_id!r} was opened at step {self._step}, not its latest, so saving it "
                                 f"would rewrite history; fork it (thread.fork('new-id')) or reopen the latest step")
            new, count = self._unsaved, len(self._messages)
            view = extend_view(self._view, self._log_end, self._log_end + len(new))
            metadata = _step_metadata(view) | ({"applied_edits": self._edits} if self._edits else {})
            try:
                record = self.store.append(self.thread_id, new, expected_step=self._expected,
                                           metadata=metadata, first_step=self._first_step)
            except StaleWrite as exc:
                raise self._stale(exc) from exc
            self._view, self._log_end, self._edits = view, record.messages, []
            saved = self._messages[count - len(new):count]
            self._unsaved = []
            self._saved_at(record.step, count)
            self._record_memories(saved, int(record.step))
        return int(record.step)

    # ------------------------------------------------------------ async
    async def aadd_user(self, content: str | Sequence[Any], **runtime: Any) -> Message:
        """Async form of :meth:`add_user`."""
        return self.add_user(content, **runtime)

    async def abuild(self, runtime: Mapping[str, Any] | None = None) -> BuiltContext:
        """Async form of :meth:`build` (providers' ``aget_messages`` run concurrently)."""
        state, merged = self._build_args(runtime)
        return self._built(await self.pipeline.abuild(state, merged))

    async def aadd_response(self, response: Any) -> Message:
        """Async form of :meth:`add_response`."""
        return self.add_response(response)

    async def aadd_tool_result(self, tool_call_id: str, content: str | Sequence[Any]) -> Message:
        """Async form of :meth:`add_tool_result`."""
        return self.add_tool_result(tool_call_id, content)

    async def asave(self) -> int:
        """Async form of :meth:`save` (the append runs in a worker thread)."""
        return await asyncio.to_thread(self.save)

    # ------------------------------------------------------------ internals
    def _built(self, built: BuiltContext) -> BuiltContext:
        """Keep the build's summaries for ``memory: record: summaries`` (nothing when recording is off)."""
        spec = self.pipeline.memory_record
        if spec is not None and spec.summaries:
            with self._lock:
                self._summaries.update((m.id, m) for m in summaries_of(built.messages))
        return built

    def _record_memories(self, saved: list[Message], step: int) -> None:
        """``memory: record:``: record the saved turn into the pipeline's memory store (after the save landed)."""
        spec = self.pipeline.memory_record
        summaries, self._summaries = list(self._summaries.values()), {}
        store = self.pipeline.memory if spec is not None else None
        if store is None:
            return
        try:
            record_turn(store, spec, self.thread_id, saved, summaries, self._recorded)
        except Exception as exc:
            exc.add_note(f"thread {self.thread_id!r}: step {step} was saved; recording it into long-term memory "
                         "(memory: record:) failed")
            raise

    def _append(self, message: Message) -> None:
        """Append ``message`` once its JSON is known to be storable (``UnstorableState`` otherwise, nothing appended)."""
        dump = stored_dump(message)
        encode_messages([dump])
        self._messages.append(message)
        self._unsaved.append(dump)

    def _pending(self) -> list[str]:
        """Calls of the last assistant message not answered by the tool messages after it."""
        answered: set[str] = set()
        for m in reversed(self._messages):
            if m.role == "tool":
                answered.add(str(m.tool_call_id))
                continue
            if m.role == "assistant":
                return [c.id for c in m.tool_calls if c.id not in answered]
            return []
        return []

    def _build_args(self, runtime: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
        with self._lock:
            merged = {**self._turn_runtime, **(runtime or {})}
            merged.setdefault("thread_id", self.thread_id)
            state: dict[str, Any] = {self.state_key: self._messages}
            if self.tools:
                state["tools"] = self.tools
            return state, merged

    def _saved_at(self, step: int, count: int) -> None:
        self._step = self._expected = step
        self._saved = count

    def _stale(self, exc: StaleWrite) -> StaleWrite:
        return StaleWrite(
            f"thread {self.thread_id!r}: another writer saved this thread after step {self._step} was loaded, so "
            f"this save was refused and nothing was written; reopen it with pipeline.thread({self.thread_id!r}) "
            f"and apply the turn again ({exc})"
        )


def _step_metadata(view: list[list[int]] | None) -> dict[str, Any]:
    """A step record's metadata: the format, and the view when the step shows only part of the log."""
    return {"format": THREAD_LOG_FORMAT} if view is None else {"format": THREAD_LOG_FORMAT, "view": view}


def _user_message(content: str | Sequence[Any]) -> Message:
    if isinstance(content, str):
        return Message(role="user", content=content)
    items = list(content)
    if not items:
        raise ValueError("add_user needs text or at least one content block")
    if all(not isinstance(b, Mapping) for b in items):
        return Message(role="user", content=tuple(items))
    if any(isinstance(b, Mapping) and "source" in b for b in items):  # Anthropic image/document blocks
        made = messages_from_anthropic({"role": "user", "content": items})
        if len(made) != 1:
            raise ValueError("add_user takes the user's own content; give tool results to add_tool_result")
        return made[0]
    return Message.from_openai({"role": "user", "content": items})


def open_thread(pipeline: Pipeline, thread_id: str, *, step: int | None = None, **options: Any) -> Thread:
    """Read ``thread_id`` from the pipeline's thread store as of its latest step (or ``step``), or start empty.

    A thread the store does not know but the pipeline's checkpointer holds in the
    older whole-checkpoint format opens from there; its first save converts it.

    Raises:
        UnknownStep: the thread has no step ``step``.
        CheckpointCorrupt: the stored thread is damaged (the message says how to recover).
    """
    store = pipeline.thread_store()
    snapshot = store.read(thread_id, step)
    legacy = legacy_thread(pipeline, thread_id) if snapshot is None and step is None else None
    historic = step is not None and snapshot is not None and store.list_steps(thread_id)[-1].step != step
    return Thread(pipeline, thread_id, store, snapshot, legacy=legacy, historic=historic, **options)


async def aopen_thread(pipeline: Pipeline, thread_id: str, *, step: int | None = None, **options: Any) -> Thread:
    """Async form of :func:`open_thread` (the log is read in a worker thread)."""
    return await asyncio.to_thread(open_thread, pipeline, thread_id, step=step, **options)


register_thread_factories(open_thread, aopen_thread)
