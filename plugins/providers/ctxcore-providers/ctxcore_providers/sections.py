"""``sections``: several providers' output joined into one system prompt.

Coding agents send one system prompt made of sections separated by
``\\n\\n---\\n\\n``. This provider runs its ``sections`` (each a provider step,
written like a pipeline step) in order and joins the text of consecutive
messages that share a role and trust, so trusted sections become one system
message. Untrusted sections never join the system message: a run of them
becomes one user-role data block at its place in the order, and the system
text continues after it. Messages that are not plain text pass through as is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ctxcore import Message
from ctxcore.kit import current_pipeline_context
from ctxcore_providers._render import stable_id

DEFAULT_SEPARATOR = "\n\n---\n\n"
_BOOL = TypeAdapter(bool)


class SectionsConfig(BaseModel):
    """Options of the ``sections`` provider."""

    model_config = ConfigDict(extra="forbid")

    sections: list[Any] = Field(min_length=1, description="Provider steps ({type: ..., options}) in order.")
    separator: str = Field(default=DEFAULT_SEPARATOR, description="Put between joined sections.")


def create_sections(config: SectionsConfig, registry: Any = None) -> Sections:
    """Create each section through the registry of the compiling pipeline.

    Raises:
        ValueError: a section is malformed, names an unknown provider or has
            invalid options; the message names ``sections[i]``.
    """
    registry = registry if registry is not None else current_pipeline_context().registry
    if registry is None:
        raise ValueError("sections are created by a pipeline (or pass the providers to Sections(...) in Python)")
    providers = []
    for i, raw in enumerate(config.sections):
        if isinstance(raw, str):
            raw = {"type": raw}
        if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
            raise ValueError(f"sections[{i}] must be a provider name or a mapping with 'type'")
        options = {k: v for k, v in raw.items() if k not in ("type", "id", "enabled")}
        try:
            component = registry.get("provider", raw["type"])
            config_model = component.validate(options)  # a disabled section is still checked
            if _BOOL.validate_python(raw.get("enabled", True)):  # parsed like a step's enabled:
                providers.append(component.create(config_model))
        except Exception as exc:
            raise ValueError(f"sections[{i}] ({raw['type']}): {exc}") from exc
    return Sections(providers, separator=config.separator)


class Sections:
    """Runs ``providers`` and joins consecutive same-role, same-trust text messages."""

    def __init__(self, providers: Sequence[Any], *, separator: str = DEFAULT_SEPARATOR) -> None:
        self.providers = list(providers)
        self.separator = separator
        self._last: tuple[tuple[Message, ...], tuple[Message, ...]] | None = None

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """The joined messages (reused while every section returns the same messages)."""
        produced: list[Message] = []
        for provider in self.providers:
            produced.extend(provider.get_messages(state, runtime))
        key = tuple(produced)
        if self._last is not None and len(self._last[0]) == len(key) and all(a is b for a, b in zip(self._last[0], key, strict=True)):
            return self._last[1]
        out = self._join(produced)
        self._last = (key, out)
        return out

    def _join(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        out: list[Message] = []
        run: list[Message] = []

        def flush() -> None:
            if not run:
                return
            if len(run) == 1:
                out.append(run[0])
            else:
                text = self.separator.join(m.text for m in run)
                first = run[0]
                out.append(Message(id=stable_id("sections", first.role, text), role=first.role, content=text,
                                   trust=first.trust, zone=first.zone, priority=max(m.priority for m in run),
                                   metadata={"sections": [m.metadata.get("context_kind", m.source or "") for m in run]}))
            run.clear()

        for m in messages:
            joinable = isinstance(m.content, str) and not m.tool_calls and m.role in ("system", "user")
            if not joinable:
                flush()
                out.append(m)
                continue
            if run and (run[0].role, run[0].trust) != (m.role, m.trust):
                flush()
            run.append(m)
        flush()
        return tuple(out)
