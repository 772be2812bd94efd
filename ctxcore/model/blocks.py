"""Provider blocks: content a provider API sends that ctxcore does not model, kept as the JSON the API reads.

Today's APIs answer with more than text and function calls: Anthropic's
``server_tool_use`` and its ``web_search_tool_result``, ``mcp_tool_use``,
``container_upload``, ``compaction``, ``search_result``...; the OpenAI Responses
API's ``reasoning`` (with ``encrypted_content``), ``web_search_call``,
``mcp_call``, ``compaction``... A :class:`ProviderBlock` holds one of them
verbatim (``raw``: the block or item as sent, ``api``: which API it belongs
to), in order, inside a message's ``content``. So a history keeps them, a
counter counts them by their JSON, a filter that drops the message drops them
with it (a block and the block it pairs with always live in one message), and
a renderer for their API sends ``raw`` back unchanged. A renderer for another
API refuses them with an error naming the block (it cannot be translated: an
encrypted search result means nothing to another provider).

Unknown future types are provider blocks too: an API adding a block must not
break every thread that receives one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

__all__ = [
    "ANTHROPIC_RESULT_KINDS",
    "CompactionState",
    "ProviderApi",
    "ProviderBlock",
    "before_compaction",
    "compaction_boundary",
    "compaction_boundary_of",
    "compaction_fold",
    "compaction_start",
    "answers_server_call",
    "foreign_block",
    "foreign_block_error",
    "has_compaction",
    "provider_blocks",
    "unpaired_server_calls",
    "without_provider_blocks",
]

ProviderApi = Literal["anthropic", "openai-responses"]

#: Anthropic blocks that answer a ``server_tool_use`` in the same assistant message: every
#: ``*_tool_result`` type of the ``anthropic`` SDK but the client's ``tool_result`` and
#: ``mcp_tool_result`` (which answers ``mcp_tool_use``); a test holds this to the SDK's types.
ANTHROPIC_RESULT_KINDS = frozenset({
    "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_search_tool_result",
    "advisor_tool_result",
})
_API_NAMES = {"anthropic": "the Anthropic Messages API", "openai-responses": "the OpenAI Responses API"}


class ProviderBlock(BaseModel):
    """One block (Anthropic) or item (OpenAI Responses) kept byte-exact: ``raw`` is what the API reads.

    Invariant: ``raw`` is a JSON object with a string ``type`` and is never
    changed after ingestion (signatures and ``encrypted_content`` are checked by
    the provider); ``cache_control`` is not part of it (ctxcore places its own).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["provider"] = "provider"
    api: ProviderApi
    raw: dict[str, Any]

    @field_validator("raw")
    @classmethod
    def _typed_json(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("type"), str):
            raise ValueError("a provider block's raw JSON needs a string 'type'")
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a provider block's raw value must be JSON: {exc}") from None
        return value

    @property
    def kind(self) -> str:
        """The block or item type the provider gave it (``server_tool_use``, ``reasoning``...)."""
        return str(self.raw["type"])

    @cached_property
    def wire_json(self) -> str:
        """The compact JSON text of ``raw``: what counters count (the provider reads this object)."""
        return json.dumps(self.raw, ensure_ascii=False, separators=(",", ":"))

    @property
    def is_compaction(self) -> bool:
        """Whether this is a compaction block/item: the provider reads nothing before it."""
        return self.raw["type"] == "compaction"


def provider_blocks(content: Any) -> list[ProviderBlock]:
    """The provider blocks of a message's ``content`` (none for a string or ``None``)."""
    if type(content) is not tuple:
        return []
    return [b for b in content if type(b) is ProviderBlock]


def has_compaction(content: Any) -> bool:
    """Whether ``content`` holds a compaction block or item."""
    return type(content) is tuple and any(type(b) is ProviderBlock and b.is_compaction for b in content)


def compaction_start(structure: Sequence[Any]) -> int:
    """The index of the newest item whose content holds a compaction, or 0 when there is none.

    The providers read nothing before a compaction (Anthropic ignores the
    blocks before it; OpenAI lets the client drop the items before it), so a
    build neither counts nor sends them. Walks from the end: a history with a
    compaction costs only its tail.
    """
    for index in range(len(structure) - 1, -1, -1):
        if has_compaction(structure[index].content):
            return index
    return 0


def _newest_compaction(items: Sequence[Any]) -> int:
    """The index of the newest item of ``items`` whose content holds a compaction, or -1.

    Reads every item, forward (iteration, not indexing: a view's iterator runs
    in C), because a fold reads each new item once anyway; the content only of
    an item whose ``has_provider_blocks`` flag is set
    (:class:`~ctxcore.model.structure.StructureItem`), so a history of plain
    text costs one flag read an item.
    """
    newest = -1
    for index, item in enumerate(items):
        if item.has_provider_blocks and has_compaction(item.content):
            newest = index
    return newest


def _newest_user(items: Sequence[Any], stop: int) -> int:
    """The index of the newest user item of ``items[:stop]``, or -1."""
    for index in range(stop - 1, -1, -1):
        if items[index].role == "user":
            return index
    return -1


#: A compaction walk's state: how many items from the newest compaction to the end of what was walked (``None``: no
#: compaction yet). Counted back from the end, so it does not depend on what came before a walked part.
CompactionState = int | None


def compaction_fold(state: CompactionState, items: Sequence[Any]) -> CompactionState:
    """One leg of a left-to-right walk for the newest compaction: ``state`` after walking ``items`` too.

    A left fold (walking two slices one after the other gives what walking
    them joined does), so a builder resumes it after what the last build
    walked and a next turn reads only the new items
    (:class:`~ctxcore.engine.prefix_memo.PrefixMemo`). Start from ``None``;
    :func:`compaction_boundary_of` turns the result into the boundary
    :func:`compaction_boundary`'s backward scan finds.
    """
    newest = _newest_compaction(items)
    if newest >= 0:
        return len(items) - newest
    return None if state is None else state + len(items)


def compaction_boundary_of(state: CompactionState, structure: Sequence[Any]) -> int:
    """The index the kept part starts at, from a :func:`compaction_fold` walk of all of ``structure``.

    Reads back from the compaction only to the user message an Anthropic
    compaction turn answers (usually the item before it).
    """
    return 0 if state is None else _opening_user_turn(structure, len(structure) - state)


def compaction_boundary(structure: Sequence[Any]) -> int:
    """The index the part a provider reads starts at (0: all of it), by a backward scan from the end.

    The newest item holding a compaction; for an Anthropic compaction block in
    an assistant turn, the user message before it (a Messages API request must
    open with a user turn).
    """
    start = compaction_start(structure)
    return _opening_user_turn(structure, start) if start else 0


def foreign_block(content: Any, api: str) -> ProviderBlock | None:
    """The first provider block of ``content`` that does not belong to ``api`` (``None``: all do)."""
    return next((b for b in provider_blocks(content) if b.api != api), None)


def foreign_block_error(block: ProviderBlock, target: str) -> str:
    """The one-line reason ``block`` cannot be sent to ``target``, and the fix."""
    return (
        f"a {block.kind!r} block from {_API_NAMES[block.api]} cannot be sent to {target}: it has no equivalent there; "
        f"render this history for {_API_NAMES[block.api]} (target.provider: {block.api}), "
        f"or drop the block with ctxcore.without_provider_blocks(messages)"
    )


def answers_server_call(kind: object) -> bool:
    """Whether an Anthropic block of type ``kind`` is the result of a ``server_tool_use`` or ``mcp_tool_use``.

    Every ``*_tool_result`` type but the client's own ``tool_result``: the
    known ones (:data:`ANTHROPIC_RESULT_KINDS`, ``mcp_tool_result``) and any
    the API adds later, so a new server tool's call never reads as unpaired.
    """
    return isinstance(kind, str) and kind.endswith("_tool_result") and kind != "tool_result"


def unpaired_server_calls(blocks: Iterable[Mapping[str, Any]]) -> list[str]:
    """Ids of Anthropic ``server_tool_use`` / ``mcp_tool_use`` blocks with no result in ``blocks`` (one assistant turn).

    Anthropic runs server tools itself and returns the call and its result in
    the same assistant message; a request that sends a call without its
    result is refused.
    """
    calls: dict[str, str] = {}
    answered: set[str] = set()
    for b in blocks:
        kind = b.get("type")
        if kind in ("server_tool_use", "mcp_tool_use") and isinstance(b.get("id"), str):
            calls[b["id"]] = kind
        elif answers_server_call(kind):
            answered.add(str(b.get("tool_use_id")))
    return [i for i in calls if i not in answered]


def without_provider_blocks(messages: Iterable[Any]) -> list[Any]:
    """The messages with every provider block removed (for rendering a history to another provider).

    A message left with no content and no tool calls is dropped; everything
    else is kept as it is. Dropping is lossy by nature: the text the model
    wrote from a search result stays, the encrypted result goes.
    """
    out = []
    for m in messages:
        kept = provider_blocks(m.content)
        if not kept:
            out.append(m)
            continue
        rest = tuple(b for b in m.content if type(b) is not ProviderBlock)
        if not rest and not m.tool_calls and m.role != "tool":
            continue
        out.append(m.model_copy(update={"content": rest or None}))
    return out


def before_compaction(messages: Sequence[Any], start: int | None = None) -> tuple[Sequence[Any], list[Any]]:
    """``(kept, dropped)``: the messages the provider reads past the newest compaction, and the rest.

    Kept: every system message (the request's ``system``/instructions, which
    compaction does not replace) and everything from the message holding the
    newest compaction block or item on; for an Anthropic compaction block in
    an assistant turn, from the user message that turn answers (a Messages API
    request must open with a user turn; the API itself drops everything before
    the block, so this costs a few counted tokens and never a wrong request).
    ``start`` is that boundary when the caller already knows it (a resumed
    :func:`compaction_fold`); by default :func:`compaction_boundary` scans for it.
    ``messages`` comes back as it is (no copy, a lazy sequence stays lazy)
    when nothing comes before the boundary.
    """
    if start is None:
        start = compaction_boundary(_structure(messages))
    if start == 0:
        return messages, []
    kept: list[Any] = []
    dropped: list[Any] = []
    for index, m in enumerate(messages):
        (kept if index >= start or m.role == "system" else dropped).append(m)
    return kept, dropped


def _opens_at_user(item: Any) -> bool:
    """Whether the kept part opens at the user message before ``item`` (an Anthropic compaction in an assistant turn)."""
    return item.role == "assistant" and any(b.api == "anthropic" and b.is_compaction for b in provider_blocks(item.content))


def _opening_user_turn(structure: Sequence[Any], start: int) -> int:
    """``start``, or the index of the user message before it when an Anthropic compaction opens the kept part."""
    if not _opens_at_user(structure[start]):
        return start
    user = _newest_user(structure, start)
    return start if user < 0 else user


def _structure(messages: Sequence[Any]) -> Sequence[Any]:
    structure = getattr(messages, "structure", None)
    return structure if isinstance(structure, Sequence) else messages
