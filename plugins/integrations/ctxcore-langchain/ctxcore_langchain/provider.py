"""Provider blocks in LangChain content: server tools, MCP, compaction and hosted tool items, kept as sent.

``ChatAnthropic`` puts Anthropic's own blocks in an ``AIMessage``'s content as
the API returned them (``server_tool_use`` and its ``web_search_tool_result``,
``mcp_tool_use``/``mcp_tool_result``, ``compaction``...), and a user turn may
hold ``search_result`` or ``container_upload`` blocks. ``ChatOpenAI`` on the
Responses API (``output_version="responses/v1"``) puts hosted tool items
(``web_search_call``, ``mcp_call``, ``compaction``...) there. Each becomes a
:class:`ctxcore.ProviderBlock` of the API it belongs to, so the build counts it
by its JSON, a filter drops it with its message, validation refuses it for
another target, and the way back gives the dict as it came.

The older ``output_version`` forms take the same path:

- ``output_version="v0"`` (``ChatOpenAI`` on the Responses API): the hosted
  tool items sit in ``additional_kwargs["tool_outputs"]``; ``ChatOpenAI`` sends
  each back as its input item, as it is, when the message's content is a list
  of dicts (see :func:`tool_outputs`). Each is a Responses provider block
  placed first in the ctxcore content, and the way back puts it back in
  ``tool_outputs`` (see :func:`keep_tool_outputs`).
- ``output_version="v1"``: LangChain's standard ``server_tool_call`` /
  ``server_tool_result`` (and ``server_tool_call_chunk``) blocks. Each chat
  model rewrites them into its provider's form (``ChatAnthropic`` into
  ``server_tool_use`` and its result, ``ChatOpenAI`` a call and its result into
  one hosted item) with the same values, so a block is counted as its own JSON:
  a close estimate, at or above the wire's JSON but for the quotes the wire
  escapes inside ``ChatOpenAI``'s MCP argument string (OpenAI drops web search
  sources; both drop ``index``). They are Anthropic's in an Anthropic message,
  else the Responses API's: ``ChatOpenAI`` rewrites any v1 block,
  ``ChatAnthropic`` only those of an Anthropic message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxcore import ProviderBlock
from ctxcore.kit import ANTHROPIC_RESULT_KINDS

__all__ = ["ANTHROPIC_KINDS", "RESPONSES_KINDS", "STANDARD_KINDS", "keep_tool_outputs", "model_api", "provider_block",
           "tool_outputs"]

#: Anthropic block types held as provider blocks (``compaction`` is decided by its shape, see :func:`provider_block`).
ANTHROPIC_KINDS = frozenset({
    "server_tool_use", "mcp_tool_use", "mcp_tool_result", "container_upload", "search_result", *ANTHROPIC_RESULT_KINDS,
})
#: OpenAI Responses output item types held as provider blocks (reasoning is counted by its text instead).
RESPONSES_KINDS = frozenset({
    "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "computer_call",
    "local_shell_call", "mcp_call", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response",
    "tool_search_call", "tool_search_output",
})
#: LangChain v1 standard blocks of a tool the provider ran (``output_version="v1"``).
STANDARD_KINDS = frozenset({"server_tool_call", "server_tool_call_chunk", "server_tool_result"})
_PROVIDERS = {"anthropic": "anthropic", "openai": "openai-responses"}


def model_api(response_metadata: Any) -> str | None:
    """The provider API of a message from its ``response_metadata["model_provider"]`` (``None``: not said)."""
    if isinstance(response_metadata, Mapping):
        return _PROVIDERS.get(str(response_metadata.get("model_provider")))
    return None


def provider_block(item: Mapping[str, Any], api: str | None = None) -> ProviderBlock | None:
    """The provider block of one content item, or ``None`` when it is not one.

    ``api`` is the message's provider when known (:func:`model_api`). A
    ``compaction`` item exists in both APIs: it is the Responses one when the
    message came from OpenAI or carries ``encrypted_content`` (Anthropic's
    carries its summary as ``content``). A v1 standard block is Anthropic's when
    the message is, else the Responses API's. ``cache_control`` is left out of
    ``raw``, as ctxcore's own ingestion does (the original dict is still what an
    unchanged message gives back).
    """
    kind = item.get("type")
    if kind in ANTHROPIC_KINDS:
        owner = "anthropic"
    elif kind in RESPONSES_KINDS:
        owner = "openai-responses"
    elif kind in STANDARD_KINDS:
        owner = "anthropic" if api == "anthropic" else "openai-responses"
    elif kind == "compaction":
        openai = api == "openai-responses" or (api is None and "encrypted_content" in item)
        owner = "openai-responses" if openai else "anthropic"
    else:
        return None
    return ProviderBlock(api=owner, raw={k: v for k, v in item.items() if k != "cache_control"})  # type: ignore[arg-type]


def tool_outputs(additional_kwargs: Mapping[str, Any], content: Any) -> list[ProviderBlock]:
    """The provider blocks of ``additional_kwargs["tool_outputs"]`` that ``ChatOpenAI`` sends back, in order.

    It sends the items (each as it is) only beside content that is a list of
    dicts; an item that is not a typed dict is carried, not counted.
    """
    if not isinstance(content, list) or not all(isinstance(b, Mapping) for b in content):
        return []
    return [_output_block(item) for item in _items(additional_kwargs) if _typed(item)]


def keep_tool_outputs(kwargs: dict[str, Any], content: Any) -> tuple[Any, bool]:
    """A changed message's content without its ``tool_outputs`` blocks, and whether any of them is still there.

    ``kwargs`` are the LangChain message's fields. Its ``additional_kwargs["tool_outputs"]``
    loses the items whose block ``content`` no longer holds (the first blocks equal to
    an item are its own: :func:`tool_outputs` puts them first), and is removed when no
    counted item is left.
    """
    additional = kwargs.get("additional_kwargs") or {}
    items = _items(additional)
    dropped = [_output_block(item) for item in items if _typed(item)]
    if not dropped:
        return content, False
    rest: list[Any] = []
    for block in content if isinstance(content, tuple) else ():
        if type(block) is ProviderBlock and block in dropped:
            dropped.remove(block)
        else:
            rest.append(block)
    if dropped:  # a filter removed some: the others stay, in order
        kept = []
        for item in items:
            if _typed(item) and _output_block(item) in dropped:
                dropped.remove(_output_block(item))
            else:
                kept.append(item)
        others = {k: v for k, v in additional.items() if k != "tool_outputs"}
        kwargs["additional_kwargs"] = {**others, "tool_outputs": kept} if any(map(_typed, kept)) else others
    still = any(map(_typed, _items(kwargs.get("additional_kwargs") or {})))
    return (tuple(rest) if isinstance(content, tuple) else content), still


def _items(additional_kwargs: Mapping[str, Any]) -> Sequence[Any]:
    """``additional_kwargs["tool_outputs"]`` as a sequence (empty when missing or not a list)."""
    items = additional_kwargs.get("tool_outputs")
    return items if isinstance(items, Sequence) and not isinstance(items, str) else ()


def _typed(item: Any) -> bool:
    """Whether a ``tool_outputs`` item is counted: a dict with a string ``type`` (what a provider block holds)."""
    return isinstance(item, Mapping) and isinstance(item.get("type"), str)


def _output_block(item: Mapping[str, Any]) -> ProviderBlock:
    """The provider block of a ``tool_outputs`` item: a Responses item, as it is (``ChatOpenAI`` sends it unchanged)."""
    return ProviderBlock(api="openai-responses", raw=dict(item))
