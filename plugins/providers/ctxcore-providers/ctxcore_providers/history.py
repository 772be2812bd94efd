"""``history``: the conversation so far, read from ``state[state_key]``.

Items may be ctxcore :class:`Message` objects or OpenAI chat dicts. A dict gets a
stable id derived from its position and content, so the same conversation
built twice yields the same ids (reports and caches line up across turns).

Converted dicts are remembered by position (as a private deep copy, so a dict
mutated in place is noticed): on the next build an item equal to the remembered
one reuses its Message instead of validating it again, so a growing
conversation costs a dict comparison per old message, not a pydantic validation.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from ctxcore.messages import Message


class HistoryConfig(BaseModel):
    """Options of the ``history`` provider."""

    model_config = ConfigDict(extra="forbid")

    state_key: str = Field(default="messages", description="Key of the message list in the state.")


class History:
    """Returns the messages stored in the state, converted and id-stamped."""

    def __init__(self, state_key: str = "messages") -> None:
        self.state_key = state_key
        self._converted: list[tuple[Any, Message]] = []

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """Convert ``state[state_key]`` to messages (empty when the key is absent).

        Raises:
            ValueError: the value is not a list, or an item is not a valid message;
                the message names the state key and the item index.
        """
        items = state.get(self.state_key)
        if items is None:
            return []
        if not isinstance(items, (list, tuple)):
            raise ValueError(f"state[{self.state_key!r}] must be a list of messages, not {type(items).__name__}")
        out: list[Message] = []
        previous = self._converted
        converted: list[tuple[Any, Message]] = []
        for index, item in enumerate(items):
            if isinstance(item, Message):
                out.append(item)
                converted.append((item, item))
                continue
            if index < len(previous):
                seen, message = previous[index]
                if seen == item:
                    out.append(message)
                    converted.append((seen, message))
                    continue
            if not isinstance(item, Mapping):
                raise ValueError(f"state[{self.state_key!r}][{index}] is a {type(item).__name__}, not a message dict")
            try:
                message = Message.from_openai(item)
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"state[{self.state_key!r}][{index}]: {exc}") from exc
            message = message.model_copy(update={"id": _stable_id(self.state_key, index, message.fingerprint)})
            out.append(message)
            converted.append((copy.deepcopy(item), message))
        self._converted = converted
        return out


def _stable_id(key: str, index: int, fingerprint: str) -> str:
    return hashlib.blake2b(f"{key}\x00{index}\x00{fingerprint}".encode(), digest_size=16).hexdigest()
