"""The ``memory_add`` and ``memory_search`` tools, for any agent loop.

``create_memory_tools(store_or_service)`` returns :class:`MemoryTools`: the
JSON-schema definitions in OpenAI's tools format (``tools.definitions``, pass
them as ``tools=`` of a chat-completions request) and ``await tools.run(name,
arguments)`` to execute a call the model made (``arguments`` as the model sent
them: a JSON string or a dict). The result is the text to send back in the
``tool`` message.

The namespace is bound when the tools are created and is not a tool
parameter: the model cannot read or write another user's memories.
Arguments the model got wrong come back as an ``error: ...`` result so it can
correct itself; a failing store raises (the agent loop decides what to do).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from ctxcore.kit.memory import resolve_namespace
from ctxcore.runtime.memory_service import MemoryService

__all__ = ["MemoryTool", "MemoryTools", "create_memory_tools"]

_Scalar = StrictStr | StrictInt | StrictFloat | StrictBool


class _AddArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1)
    metadata: dict[str, _Scalar] | None = None


class _SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)
    limit: int | None = Field(default=None, ge=1)


@dataclass(frozen=True)
class MemoryTool:
    """One tool: its OpenAI definition and the coroutine that runs a call."""

    name: str
    description: str
    parameters: dict[str, Any]
    _run: Callable[[dict[str, Any]], Awaitable[str]]

    @property
    def definition(self) -> dict[str, Any]:
        """``{"type": "function", "function": {name, description, parameters}}``."""
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}

    async def run(self, arguments: Mapping[str, Any] | str | None = None) -> str:
        """Execute one call; ``arguments`` is the model's JSON string or a dict."""
        parsed = _parse_arguments(self.name, arguments)
        if isinstance(parsed, str):
            return parsed
        return await self._run(parsed)


def _parse_arguments(name: str, arguments: Mapping[str, Any] | str | None) -> dict[str, Any] | str:
    """The arguments as a dict, or the ``error: ...`` text to hand back to the model."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            return f"error: {name} arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(arguments, Mapping):
        return f"error: {name} arguments must be a JSON object, got {type(arguments).__name__}"
    return dict(arguments)


def _explain(name: str, exc: ValidationError) -> str:
    problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors(include_url=False))
    return f"error: {name} arguments: {problems}"


class MemoryTools:
    """The tool pair bound to a :class:`MemoryService` (its namespace and store).

    Iterating yields the :class:`MemoryTool` objects; ``definitions`` gives what a
    chat-completions request takes as ``tools``.
    """

    def __init__(self, service: MemoryService, *, max_limit: int = 20) -> None:
        if max_limit < 1:
            raise ValueError("max_limit must be at least 1")
        self.service = service
        self.max_limit = max_limit
        self._tools = {t.name: t for t in (self._add_tool(), self._search_tool())}

    # ----------------------------------------------------------- definitions
    def _add_tool(self) -> MemoryTool:
        parameters = {
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "The fact to remember, as one self-contained sentence."},
                "metadata": {
                    "type": "object",
                    "description": "Optional labels, e.g. {\"topic\": \"preferences\"}.",
                    "additionalProperties": {"type": ["string", "number", "boolean"]},
                },
            },
            "required": ["content"],
            "additionalProperties": False,
        }
        return MemoryTool("memory_add", "Store a fact in long-term memory so it can be recalled in later conversations.",
                          parameters, self._run_add)

    def _search_tool(self) -> MemoryTool:
        parameters = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for, in a few words."},
                "limit": {"type": "integer", "minimum": 1, "maximum": self.max_limit,
                          "description": f"How many memories to return (default {self.service.default_limit})."},
            },
            "required": ["query"],
            "additionalProperties": False,
        }
        return MemoryTool("memory_search", "Search long-term memory for facts stored in earlier conversations.",
                          parameters, self._run_search)

    # ------------------------------------------------------------------ runs
    async def _run_add(self, arguments: dict[str, Any]) -> str:
        try:
            args = _AddArgs.model_validate(arguments)
        except ValidationError as exc:
            return _explain("memory_add", exc)
        if not args.content.strip():
            return "error: memory_add arguments: content: is blank"
        items = await self.service.aadd(args.content, metadata=args.metadata)
        if not items:
            return "Nothing new to store."
        return "Stored memory " + ", ".join(item.id for item in items) + "."

    async def _run_search(self, arguments: dict[str, Any]) -> str:
        try:
            args = _SearchArgs.model_validate(arguments)
        except ValidationError as exc:
            return _explain("memory_search", exc)
        if not args.query.strip():
            return "error: memory_search arguments: query: is blank"
        limit = min(args.limit or self.service.default_limit, self.max_limit)
        items = await self.service.asearch(args.query, limit=limit)
        return self.service.format_retrieved(items)

    # ------------------------------------------------------------ container
    @property
    def definitions(self) -> list[dict[str, Any]]:
        """The OpenAI tool definitions (``memory_add``, ``memory_search``)."""
        return [t.definition for t in self._tools.values()]

    @property
    def names(self) -> list[str]:
        """The tool names."""
        return list(self._tools)

    def __iter__(self) -> Iterator[MemoryTool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __getitem__(self, name: str) -> MemoryTool:
        try:
            return self._tools[name]
        except KeyError:
            raise KeyError(f"no memory tool {name!r}; the tools are {', '.join(self._tools)}") from None

    async def run(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
        """Run the call ``name(arguments)`` the model made and return the tool result text.

        Raises:
            KeyError: ``name`` is not one of these tools (check ``names`` first).
        """
        return await self[name].run(arguments)


def create_memory_tools(memory: Any, *, namespace: str | tuple[str, ...] | None = None, default_limit: int = 5, max_limit: int = 20) -> MemoryTools:
    """The ``memory_add`` / ``memory_search`` tools over a store or a :class:`MemoryService`.

    Args:
        memory: a ``MemoryStore`` (wrapped in a service for ``namespace``) or a service.
        namespace: the namespace the tools read and write, a string or a tuple such as
            ``("user", "42")`` (a store only; a service keeps its own).
        default_limit: results of ``memory_search`` when the model gives no ``limit``.
        max_limit: the largest ``limit`` the model may ask for (larger asks are capped).
    """
    if isinstance(memory, MemoryService):
        if namespace is not None and resolve_namespace(namespace) != memory.namespace:
            raise ValueError("namespace= applies to a store; this service is bound to namespace "
                             f"{memory.namespace!r} (create a MemoryService for the other namespace)")
        return MemoryTools(memory, max_limit=max_limit)
    return MemoryTools(MemoryService(memory, namespace, default_limit=default_limit), max_limit=max_limit)
