"""The OpenAI Responses API's rules on ``input`` items, as the stub in :mod:`.openai_server` enforces them.

Reasoning models answer with a ``reasoning`` item (its ``encrypted_content``
opaque and checked) before the message or function call it led to; sending
that item back without its reasoning, reasoning without the item it led to,
changed encrypted content, a ``function_call_output`` or an
``mcp_approval_response`` answering nothing: each is refused with a 400 by
the real API, and by the stub with the same wording.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["compaction_item", "reasoning_item", "responses_input_problem", "sign_item"]

_KEY = b"ctxcore-stub-responses-key"
#: message roles that end a model turn: a reasoning item cannot be followed by one of them.
_INPUT_ROLES = frozenset({"user", "system", "developer"})


def sign_item(item_id: str) -> str:
    """The stub's ``encrypted_content`` for the item ``item_id`` (a keyed digest, base64)."""
    return base64.b64encode(hashlib.blake2b(item_id.encode(), key=_KEY, digest_size=24).digest()).decode()


def reasoning_item(item_id: str) -> dict[str, Any]:
    """A ``reasoning`` output item with the stub's encrypted content, as ``store=false`` requests get it."""
    return {"type": "reasoning", "id": item_id, "summary": [], "encrypted_content": sign_item(item_id)}


def compaction_item(item_id: str) -> dict[str, Any]:
    """A ``compaction`` item (opaque, encrypted), as server-side compaction emits it."""
    return {"type": "compaction", "id": item_id, "encrypted_content": sign_item(item_id)}


def responses_input_problem(items: Sequence[Any], reasoning_of: Mapping[str, str], *,
                            verify_encrypted: bool = True) -> tuple[str, str] | None:
    """``(param, message)`` for the first rule ``items`` break, or ``None``.

    ``reasoning_of`` maps the id of each output item that followed a
    reasoning item to that reasoning item's id. ``verify_encrypted=False``
    skips the check of ``encrypted_content`` against :func:`sign_item`: for a
    stub that does not sign its own reasoning (a test bringing reasoning items
    of its own).
    """
    seen: set[str] = set()
    calls: set[str] = set()
    approvals: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            return f"input[{i}]", "Invalid input item: expected an object."
        problem = _item_problem(i, item, items, seen, calls, approvals, reasoning_of, verify_encrypted)
        if problem is not None:
            return f"input[{i}]", problem
        if isinstance(item.get("id"), str):
            seen.add(item["id"])
    return None


def _item_problem(
    i: int, item: Mapping[str, Any], items: Sequence[Any], seen: set[str], calls: set[str], approvals: set[str],
    reasoning_of: Mapping[str, str], verify_encrypted: bool,
) -> str | None:
    kind, item_id = item.get("type", "message"), item.get("id")
    needed = reasoning_of.get(item_id) if isinstance(item_id, str) else None
    if needed is not None and needed not in seen:
        return f"Item '{item_id}' of type '{kind}' was provided without its required 'reasoning' item: '{needed}'."
    if (verify_encrypted and kind in ("reasoning", "compaction") and isinstance(item_id, str)
            and item.get("encrypted_content") != sign_item(item_id)):
        return f"The encrypted content for item {item_id} could not be verified."
    if kind == "reasoning" and _ends_turn(items, i + 1):
        return f"Item '{item_id}' of type 'reasoning' was provided without its required following item."
    if kind == "function_call":
        calls.add(str(item.get("call_id")))
    elif kind == "function_call_output" and item.get("call_id") not in calls:
        return f"No tool call found for function call output with call_id {item.get('call_id')}."
    elif kind == "mcp_approval_request":
        approvals.add(str(item.get("id")))
    elif kind == "mcp_approval_response" and item.get("approval_request_id") not in approvals:
        return f"No MCP approval request found with id {item.get('approval_request_id')}."
    return None


def _ends_turn(items: Sequence[Any], k: int) -> bool:
    """Whether nothing of the model's turn follows position ``k`` (the end, or an input message)."""
    if k >= len(items):
        return True
    nxt = items[k]
    return isinstance(nxt, Mapping) and nxt.get("type", "message") == "message" and nxt.get("role") in _INPUT_ROLES
