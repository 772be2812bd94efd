"""The ``redact`` filter: secrets in message text never reach the model.

It applies ctxcore's own rules (:mod:`ctxcore.redaction`, the ones logs and
reports use) to what the model would read: string content, text blocks and
tool-call arguments. Tool-call arguments are JSON, so they also get the
key-name rule (``{"api_key": ...}`` loses its value whatever it looks like).
A pipeline adds its own key names and value patterns; it never replaces the
defaults.

A redacted message keeps its id: the build report lists it as kept, showing
the redacted text, so the original secret appears nowhere in the output or the
report (a new id would list the original, secret included, as dropped).
Messages in the protected zone (system prompts, project rules) are never
rewritten, as every filter promises; put no secrets there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ctxcore import FilterContext, Message, TextBlock, ToolCall
from ctxcore.kit import DEFAULT_REDACTOR, Redactor

__all__ = ["RedactConfig", "Redact"]

Role = Literal["user", "assistant", "tool", "system"]
_DEFAULT_ROLES: tuple[Role, ...] = ("user", "assistant", "tool")


class RedactConfig(BaseModel):
    """Options of the ``redact`` filter."""

    model_config = ConfigDict(extra="forbid")

    roles: list[Role] = Field(
        default_factory=lambda: list(_DEFAULT_ROLES),
        description="Roles whose messages are scanned (protected messages are never rewritten).",
    )
    extra_key_names: list[str] = Field(
        default_factory=list,
        description="More key-name suffixes whose values are secrets in tool-call arguments (e.g. 'pin', 'ssn').",
    )
    extra_patterns: list[str] = Field(
        default_factory=list,
        description="More regular expressions of secret substrings (e.g. 'ACME-[0-9]{6}').",
    )

    @field_validator("extra_patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"pattern {p!r} is not a regular expression: {exc}") from None
        return patterns


class Redact:
    """Replaces secrets in the scanned roles' text and tool-call arguments with ``[REDACTED]``."""

    def __init__(self, config: RedactConfig) -> None:
        self.roles = frozenset(config.roles)
        self.redactor: Redactor = DEFAULT_REDACTOR.extended(
            key_names=config.extra_key_names, value_patterns=config.extra_patterns
        )

    def apply(self, messages: Sequence[Message], ctx: FilterContext) -> list[Message]:
        """The messages with secrets replaced; a note in the report says how many were rewritten."""
        out: list[Message] = []
        changed = 0
        for m in messages:
            if m.role in self.roles and m.zone != "protected":
                clean = self.redact_message(m)
                changed += clean is not m
                m = clean
            out.append(m)
        if changed and ctx.report is not None:
            ctx.report.notes.append(f"{ctx.step_id}: redacted secrets in {changed} message(s)")
        return out

    def redact_message(self, m: Message) -> Message:
        """``m`` itself when it holds no secret, else a copy (same id) with the secrets replaced."""
        changes: dict[str, Any] = {}
        content = self._content(m.content)
        if content != m.content:
            changes["content"] = content
        calls = tuple(self._call(c) for c in m.tool_calls)
        if calls != m.tool_calls:
            changes["tool_calls"] = calls
        return m.with_provenance(**changes) if changes else m

    def _content(self, content: Any) -> Any:
        if isinstance(content, str):
            return self.redactor.text(content)
        if isinstance(content, tuple):
            return tuple(
                b.model_copy(update={"text": self.redactor.text(b.text)}) if isinstance(b, TextBlock) else b
                for b in content
            )
        return content

    def _call(self, call: ToolCall) -> ToolCall:
        try:
            parsed = json.loads(call.arguments)
        except ValueError:  # not JSON (a model's malformed call): scan it as text
            text = self.redactor.text(call.arguments)
            return call if text == call.arguments else call.model_copy(update={"arguments": text})
        clean = self.redactor.value(parsed)
        if clean == parsed:
            return call  # nothing secret: keep the model's exact bytes
        return call.model_copy(update={"arguments": json.dumps(clean, ensure_ascii=False)})
