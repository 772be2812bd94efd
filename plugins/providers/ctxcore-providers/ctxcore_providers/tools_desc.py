"""``tools_desc``: the available tools as one system message.

The block is a preformatted ``text``, or rendered from JSON-schema tool
definitions (``tools`` in the config, else ``state[state_key]``: a list of
OpenAI ``{"type": "function", "function": {...}}`` dicts, flat ``{name,
description, parameters}`` dicts or Anthropic ``input_schema`` dicts, or a
string). The template defaults to the ``tools_template`` prompt,
``"Available tools:\\n{tools_desc}"``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import Message, system
from ctxcore.kit import get_prompt
from ctxcore_providers._markers import neutralize_markers
from ctxcore_providers._render import stable_id


class ToolsDescConfig(BaseModel):
    """Options of the ``tools_desc`` provider."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(default=None, description="A preformatted tool description block.")
    tools: list[dict[str, Any]] | None = Field(default=None, description="JSON-schema tool definitions to render.")
    state_key: str = Field(default="tools", description="State key read when neither text nor tools is given.")
    template: str | None = Field(default=None, description="Wraps the block; must contain {tools_desc}.")
    priority: int = 90


def render_tools(tools: Sequence[Mapping[str, Any]]) -> str:
    """One ``- name: description`` line per tool, then its parameters (name, type, required)."""
    lines = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise ValueError(f"tools[{i}] is a {type(tool).__name__}, not a tool definition")
        inner = tool.get("function")
        fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else tool
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tools[{i}] has no 'name' (expected {{'name', 'description', 'parameters'}})")
        desc = " ".join(str(fn.get("description") or "").split())
        lines.append(f"- {name}: {desc}" if desc else f"- {name}")
        schema = fn.get("parameters") or fn.get("input_schema") or {}
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        if isinstance(props, Mapping) and props:
            required = set(schema.get("required") or ())
            params = []
            for pname, pschema in props.items():
                ptype = pschema.get("type", "any") if isinstance(pschema, Mapping) else "any"
                if isinstance(ptype, list):
                    ptype = "|".join(map(str, ptype))
                params.append(f"{pname} ({ptype}{', required' if pname in required else ''})")
            lines.append(f"  parameters: {', '.join(params)}")
    return "\n".join(lines)


class ToolsDesc:
    """Renders the tool block; the message is reused while the tool list is unchanged."""

    def __init__(self, text: str | None = None, tools: Sequence[Mapping[str, Any]] | None = None, *,
                 state_key: str = "tools", template: str | None = None, priority: int = 90) -> None:
        self.template = template if template is not None else get_prompt("tools_template")
        if "{tools_desc}" not in self.template:
            raise ValueError("tools_desc template must contain {tools_desc}")
        self.state_key = state_key
        self.priority = priority
        self._fixed: tuple[Message, ...] | None = None
        if text is not None or tools is not None:
            self._fixed = self._render(text if text is not None else list(tools or ()))
        self._last: tuple[Any, tuple[Message, ...]] | None = None

    def _render(self, value: Any) -> tuple[Message, ...]:
        if isinstance(value, str):
            block = value.strip()
        elif isinstance(value, (list, tuple)):
            block = render_tools(value)
        else:
            raise ValueError(f"state[{self.state_key!r}] must be a string or a list of tool definitions, not {type(value).__name__}")
        if not block:
            return ()
        block = neutralize_markers(block)  # descriptions come from state (tool servers, users): never a live marker
        text = self.template.replace("{tools_desc}", block)
        return (system(text, id=stable_id("tools_desc", text), priority=self.priority),)

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """The tool block, or nothing when there are no tools."""
        if self._fixed is not None:
            return self._fixed
        value = state.get(self.state_key)
        if value is None:
            return ()
        if self._last is not None and self._last[0] == value:
            return self._last[1]
        out = self._render(value)
        self._last = (copy.deepcopy(value), out)
        return out


def tools_json(tools: Sequence[Mapping[str, Any]]) -> str:
    """Compact JSON of the tool list (for callers that want the raw schemas in text)."""
    return json.dumps(list(tools), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
