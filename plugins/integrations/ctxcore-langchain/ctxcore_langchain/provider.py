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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxcore import ProviderBlock
from ctxcore.kit import ANTHROPIC_RESULT_KINDS

__all__ = ["ANTHROPIC_KINDS", "RESPONSES_KINDS", "model_api", "provider_block"]

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
    carries its summary as ``content``). ``cache_control`` is left out of
    ``raw``, as ctxcore's own ingestion does (the original dict is still what an
    unchanged message gives back).
    """
    kind = item.get("type")
    if kind in ANTHROPIC_KINDS:
        owner = "anthropic"
    elif kind in RESPONSES_KINDS:
        owner = "openai-responses"
    elif kind == "compaction":
        openai = api == "openai-responses" or (api is None and "encrypted_content" in item)
        owner = "openai-responses" if openai else "anthropic"
    else:
        return None
    return ProviderBlock(api=owner, raw={k: v for k, v in item.items() if k != "cache_control"})  # type: ignore[arg-type]
