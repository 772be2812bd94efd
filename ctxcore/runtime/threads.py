"""Threads: the turn loop over a checkpointer (``Pipeline.thread(thread_id)``).

A :class:`Thread` owns what every agent loop otherwise writes by hand: load the
conversation, append the user turn, build the request, append the model's reply
and the tool results, save. The conversation is a plain list of ctxcore
:class:`Message` objects that only ever grows by ``append``; every build hands
that same list to the pipeline as ``state["messages"]``, so the history provider
sees an append-only list and converts only the new tail (docs/threads.md).

Saving writes one checkpoint per :meth:`Thread.save` with the next step. The
checkpointer refuses a step that is not newer than the stored latest, so a
second writer of the same thread (another process, another ``Thread`` object)
gets :class:`StaleWrite` and nothing is overwritten: reopen the thread and apply
the turn again. A turn is acknowledged when ``save`` returns.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ctxcore.engine.builder import BuiltContext
from ctxcore.errors import CheckpointCorrupt, InvalidHistory, StaleWrite
from ctxcore.model.anthropic_io import messages_from_anthropic
from ctxcore.model.messages import Message
from ctxcore.pipeline.spec import Pipeline, register_thread_factories
from ctxcore.runtime.replies import message_from_reply

__all__ = ["THREAD_FORMAT", "Thread", "aopen_thread", "open_thread", "saved_messages"]

#: ``runtime_metadata["format"]`` of a thread checkpoint; ``state_dump["messages"]`` holds the messages.
THREAD_FORMAT = "ctxcore.thread/1"


class Thread:
    """One conversation: its messages, its checkpoint step and the pipeline that builds its requests.

    Create with :meth:`Pipeline.thread` (or ``await Pipeline.athread``), not directly.
    Methods are safe to call from several threads of one process; the
    checkpointer's step fence handles writers in other processes.
    """

    #: ``runtime_metadata["format"]`` of the checkpoints a thread writes (:data:`THREAD_FORMAT`), for other
    #: writers of the same format (e.g. the OpenAI Agents SDK session of ctxcore-openai-agents).
    FORMAT: ClassVar[str] = THREAD_FORMAT

    def __init__(
        self, pipeline: Pipeline, thread_id: str, checkpointer: Any, checkpoint: Mapping[str, Any] | None = None,
        *, state_key: str = "messages", tools: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.pipeline = pipeline
        self.thread_id = thread_id
        self.checkpointer = checkpointer
        self.state_key = state_key
        #: tool definitions sent with every build (``state["tools"]``), e.g. OpenAI function tools.
        self.tools = [dict(t) for t in tools]
        self._lock = threading.RLock()
        self._messages: list[Message] = []  # append-only: the history provider relies on it
        self._dumps: list[dict[str, Any]] = []  # JSON of each message, made once
        self._step: int | None = None
        self._turn_runtime: dict[str, Any] = {}
        if checkpoint is not None:
            self._load(checkpoint)
        self._saved = len(self._messages)

    # ------------------------------------------------------------ reading
    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation so far (saved and unsaved), oldest first."""
        with self._lock:
            return tuple(self._messages)

    @property
    def step(self) -> int | None:
        """The step of the checkpoint this thread was loaded from or last saved as; ``None`` before the first save."""
        return self._step

    @property
    def unsaved(self) -> int:
        """How many messages were appended since the last save (or load)."""
        return len(self._messages) - self._saved

    @property
    def pending_tool_calls(self) -> tuple[str, ...]:
        """Ids of the last assistant message's tool calls that have no result yet."""
        with self._lock:
            return tuple(self._pending())

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
        return self.pipeline.build(state, merged)

    def add_response(self, response: Any) -> Message:
        """Append the model's reply: OpenAI chat completion (or its message), Responses API response, Anthropic Message; or their dicts.

        Text and tool calls are kept; Anthropic thinking blocks are kept
        byte-exact and sent back unchanged. Returns the appended message.

        Raises:
            ValueError: the reply is none of the supported shapes.
            InvalidHistory: tool calls of an earlier reply are still unanswered.
        """
        message = message_from_reply(response)
        with self._lock:
            pending = self._pending()
            if pending:
                raise InvalidHistory(
                    f"thread {self.thread_id!r}: tool calls {', '.join(pending)} have no result yet; add them with "
                    "add_tool_result before the next reply"
                )
            self._append(message)
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
        """Write one checkpoint with the next step; return that step. The turn is acknowledged when this returns.

        Raises:
            StaleWrite: another writer saved this thread since it was loaded; nothing
                was written. Reopen the thread (``pipeline.thread(id)``) and apply the turn again.
            UnstorableState: a message's metadata is not JSON; nothing was written.
        """
        with self._lock:
            step, state, meta = self._checkpoint_args()
            try:
                self.checkpointer.save_checkpoint(self.thread_id, step, state, None, meta)
            except StaleWrite as exc:
                raise self._stale(exc) from exc
            self._saved_at(step)
        return step

    # ------------------------------------------------------------ async
    async def aadd_user(self, content: str | Sequence[Any], **runtime: Any) -> Message:
        """Async form of :meth:`add_user`."""
        return self.add_user(content, **runtime)

    async def abuild(self, runtime: Mapping[str, Any] | None = None) -> BuiltContext:
        """Async form of :meth:`build` (providers' ``aget_messages`` run concurrently)."""
        state, merged = self._build_args(runtime)
        return await self.pipeline.abuild(state, merged)

    async def aadd_response(self, response: Any) -> Message:
        """Async form of :meth:`add_response`."""
        return self.add_response(response)

    async def aadd_tool_result(self, tool_call_id: str, content: str | Sequence[Any]) -> Message:
        """Async form of :meth:`add_tool_result`."""
        return self.add_tool_result(tool_call_id, content)

    async def asave(self) -> int:
        """Async form of :meth:`save` (the checkpointer's ``asave_checkpoint`` when it has one)."""
        with self._lock:
            step, state, meta = self._checkpoint_args()
        save = getattr(self.checkpointer, "asave_checkpoint", None)
        try:
            if save is not None:
                await save(self.thread_id, step, state, None, meta)
            else:
                await asyncio.to_thread(self.checkpointer.save_checkpoint, self.thread_id, step, state, None, meta)
        except StaleWrite as exc:
            raise self._stale(exc) from exc
        with self._lock:
            self._saved_at(step)
        return step

    # ------------------------------------------------------------ internals
    def _append(self, message: Message) -> None:
        self._messages.append(message)
        self._dumps.append(message.model_dump(mode="json"))

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

    def _checkpoint_args(self) -> tuple[int, dict[str, Any], dict[str, Any]]:
        step = 0 if self._step is None else self._step + 1
        return step, {"messages": list(self._dumps)}, {"format": THREAD_FORMAT, "messages": len(self._dumps)}

    def _saved_at(self, step: int) -> None:
        self._step = step
        self._saved = len(self._messages)

    def _stale(self, exc: StaleWrite) -> StaleWrite:
        return StaleWrite(
            f"thread {self.thread_id!r}: another writer saved this thread after step {self._step} was loaded, so "
            f"this save was refused and nothing was written; reopen it with pipeline.thread({self.thread_id!r}) "
            f"and apply the turn again ({exc})"
        )

    def _load(self, checkpoint: Mapping[str, Any]) -> None:
        for message, item in zip(*_saved_messages(self.thread_id, checkpoint), strict=True):
            self._messages.append(message)
            self._dumps.append(item)
        self._step = int(checkpoint["step"])


def _saved_messages(thread_id: str, checkpoint: Mapping[str, Any]) -> tuple[list[Message], list[Any]]:
    """The messages of a Thread checkpoint, and their stored dumps; ``CheckpointCorrupt`` when it is not one."""
    state = checkpoint.get("state_dump")
    raw = state.get("messages") if isinstance(state, Mapping) else None
    if not isinstance(raw, list):
        raise CheckpointCorrupt(
            f"thread {thread_id!r} step {checkpoint.get('step')}: the checkpoint has no 'messages' list, so it was "
            "not written by a ctxcore Thread; use another thread id or `ctx checkpoint show` to inspect it"
        )
    messages = []
    for i, item in enumerate(raw):
        try:
            messages.append(Message.model_validate(item))
        except ValueError as exc:
            raise CheckpointCorrupt(f"thread {thread_id!r} step {checkpoint.get('step')}: message {i} is not a ctxcore message: {exc}") from exc
    return messages, raw


def saved_messages(thread_id: str, checkpoint: Mapping[str, Any]) -> list[Message]:
    """The messages a Thread had saved in ``checkpoint`` (one of ``list_checkpoints(thread_id)``), oldest first.

    Raises:
        CheckpointCorrupt: the checkpoint was not written by a :class:`Thread`.
    """
    return _saved_messages(thread_id, checkpoint)[0]


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


def open_thread(pipeline: Pipeline, thread_id: str, **options: Any) -> Thread:
    """Load the newest checkpoint of ``thread_id`` from the pipeline's checkpointer, or start empty."""
    checkpointer = pipeline.thread_checkpointer()
    return Thread(pipeline, thread_id, checkpointer, checkpointer.get_checkpoint(thread_id), **options)


async def aopen_thread(pipeline: Pipeline, thread_id: str, **options: Any) -> Thread:
    """Async form of :func:`open_thread`."""
    checkpointer = pipeline.thread_checkpointer()
    get = getattr(checkpointer, "aget_checkpoint", None)
    checkpoint = await get(thread_id) if get is not None else await asyncio.to_thread(checkpointer.get_checkpoint, thread_id)
    return Thread(pipeline, thread_id, checkpointer, checkpoint, **options)


register_thread_factories(open_thread, aopen_thread)
