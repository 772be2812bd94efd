"""StateMessageStore: the conversation kept in a state mapping, appended to safely.

The store writes :class:`Message` objects into ``state[key]`` (the list the
``history`` provider reads), after coercing each item (strict: Messages or valid
OpenAI dicts only; lenient: also strings and loose dicts), applies a retention
policy (keep the newest N, never starting with an orphan tool result), and
notifies subscribers with a :class:`MessageEvent` after each append. Appends
are serialised by a lock; subscribers run after the lock is released, in
append order per thread, so a subscriber may read the store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol

from ctxcore.model.messages import Message

__all__ = [
    "MessageCoercer",
    "StrictMessageCoercer",
    "LenientMessageCoercer",
    "RetentionPolicy",
    "MaxCountRetention",
    "MessageEvent",
    "StateMessageStore",
]


class MessageCoercer(Protocol):
    """Turns an appended item into a Message (or raises ValueError)."""

    def __call__(self, item: Any) -> Message:
        """The message for ``item``."""
        ...


class StrictMessageCoercer:
    """Accepts Message objects and valid OpenAI message dicts; anything else is an error."""

    def __call__(self, item: Any) -> Message:
        """The message for ``item``.

        Raises:
            ValueError: ``item`` is not a Message or a valid message dict; says why.
        """
        if isinstance(item, Message):
            return item
        if isinstance(item, Mapping):
            try:
                return Message.from_openai(item)
            except (ValueError, TypeError, KeyError) as exc:
                raise ValueError(f"invalid message dict: {exc}") from exc
        raise ValueError(
            f"cannot store a {type(item).__name__} as a message: give a ctxcore Message or an OpenAI dict "
            "like {'role': 'user', 'content': '...'} (or use LenientMessageCoercer)"
        )


class LenientMessageCoercer:
    """Best effort: strings become user messages, loose dicts get a role, other objects their ``str``."""

    def __init__(self, default_role: str = "user") -> None:
        self.default_role = default_role
        self._strict = StrictMessageCoercer()

    def __call__(self, item: Any) -> Message:
        """The message for ``item``; never raises for plain data."""
        if isinstance(item, Message):
            return item
        if isinstance(item, str):
            return Message(role=self.default_role, content=item)  # type: ignore[arg-type]
        if isinstance(item, Mapping):
            try:
                return self._strict(item)
            except ValueError:
                role = item.get("role") if item.get("role") in ("user", "assistant", "system") else self.default_role
                content = item.get("content", item.get("text"))
                return Message(role=role, content=content if isinstance(content, str) else str(dict(item)))  # type: ignore[arg-type]
        if isinstance(item, tuple) and len(item) == 2 and item[0] in ("user", "assistant", "system"):
            return Message(role=item[0], content=str(item[1]))
        return Message(role=self.default_role, content=str(item))  # type: ignore[arg-type]


class RetentionPolicy(Protocol):
    """Decides what the store keeps after an append."""

    def apply(self, messages: list[Message]) -> list[Message]:
        """The messages to keep (a suffix, normally)."""
        ...


class MaxCountRetention:
    """Keep the newest ``max_messages``; a kept run never starts with tool results whose call was cut."""

    def __init__(self, max_messages: int) -> None:
        if max_messages <= 0:
            raise ValueError("max_messages must be positive")
        self.max_messages = max_messages

    def apply(self, messages: list[Message]) -> list[Message]:
        """The newest messages within the limit."""
        if len(messages) <= self.max_messages:
            return messages
        kept = messages[-self.max_messages:]
        start = 0
        while start < len(kept) and kept[start].role == "tool":
            start += 1
        return kept[start:]


@dataclass(frozen=True)
class MessageEvent:
    """Sent to subscribers after an append: the stored message and its index then."""

    kind: str
    message: Message
    index: int
    key: str


Subscriber = Callable[[MessageEvent], None]


class StateMessageStore:
    """Messages kept in ``state[key]`` with coercion, retention, a lock and subscribers.

    Args:
        state: the mapping holding the list (a new dict when omitted).
        key: the list's key (the ``history`` provider's ``state_key``).
        coercer: :class:`StrictMessageCoercer` (default) or :class:`LenientMessageCoercer`.
        retention: e.g. ``MaxCountRetention(200)``; ``None`` keeps everything.
    """

    def __init__(self, state: MutableMapping[str, Any] | None = None, key: str = "messages", *,
                 coercer: MessageCoercer | None = None, retention: RetentionPolicy | None = None) -> None:
        self.state: MutableMapping[str, Any] = state if state is not None else {}
        self.key = key
        self.coercer: MessageCoercer = coercer or StrictMessageCoercer()
        self.retention = retention
        self._lock = threading.RLock()
        self._subscribers: list[Subscriber] = []
        existing = self.state.get(key)
        if existing is None:
            self.state[key] = []
        elif not isinstance(existing, list):
            raise ValueError(f"state[{key!r}] must be a list, not {type(existing).__name__}")
        else:
            self.state[key] = [self._coerce(item, i) for i, item in enumerate(existing)]

    def _coerce(self, item: Any, index: int | None = None) -> Message:
        try:
            return self.coercer(item)
        except ValueError as exc:
            where = f"state[{self.key!r}][{index}]" if index is not None else f"append to state[{self.key!r}]"
            raise ValueError(f"{where}: {exc}") from exc

    @property
    def messages(self) -> tuple[Message, ...]:
        """A snapshot of the stored messages."""
        with self._lock:
            return tuple(self.state[self.key])

    def __len__(self) -> int:
        return len(self.state[self.key])

    def append(self, item: Any) -> Message:
        """Coerce and store ``item``; notify subscribers; return the stored message.

        Raises:
            ValueError: the coercer refused the item (nothing is stored).
        """
        return self.extend([item])[0]

    def extend(self, items: Iterable[Any]) -> list[Message]:
        """Append several items atomically (all are coerced before any is stored)."""
        coerced = [self._coerce(item) for item in items]
        events: list[MessageEvent] = []
        with self._lock:
            current: list[Message] = list(self.state[self.key])
            for m in coerced:
                current.append(m)
            if self.retention is not None:
                current = self.retention.apply(current)
            self.state[self.key] = current
            positions = {id(m): i for i, m in enumerate(current)}
            events = [MessageEvent("append", m, positions.get(id(m), -1), self.key) for m in coerced]
            subscribers = list(self._subscribers)
        for event in events:
            for subscriber in subscribers:
                subscriber(event)
        return coerced

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber(event)`` after each append; returns a function that unsubscribes."""
        with self._lock:
            self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            with self._lock:
                if subscriber in self._subscribers:
                    self._subscribers.remove(subscriber)

        return unsubscribe

    def clear(self) -> None:
        """Remove every message (no events)."""
        with self._lock:
            self.state[self.key] = []

    def to_openai(self) -> list[dict[str, Any]]:
        """The stored messages as OpenAI dicts (for checkpoints)."""
        return [m.to_openai() for m in self.messages]
