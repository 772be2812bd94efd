"""``budget_hint``: tell the model how much of its context budget the request uses.

A filter, not a provider, because the numbers exist only after the budget
filters ran: place it last in ``filters``. It appends one message (by default a
user message, which every provider accepts at the end and which Anthropic
merges into the last user turn, so the cached request prefix is untouched) with
the total, used and remaining tokens and the pressure (used / total). ``total``
is the filter budget: the model's input budget minus tool schemas.

The hint never pushes the request over budget: when it does not fit it is left
out and the report says so. A hint already present (from an earlier pass) is
replaced, so the filter is idempotent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ctxcore import FilterContext, Message

#: metadata marker of the hint message.
HINT_MARKER = "budget_hint"
DEFAULT_TEMPLATE = (
    "[Context budget: {used} of {total} tokens used, {remaining} remaining ({pressure:.0%} pressure).]"
)


class BudgetHintConfig(BaseModel):
    """Options of the ``budget_hint`` filter."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int | None = Field(default=None, ge=1, description="Total to report; default: the pipeline's budget.")
    role: Literal["user", "system"] = Field(default="user", description="Role of the hint message.")
    template: str = Field(
        default=DEFAULT_TEMPLATE,
        description="Text with {total}, {used}, {remaining} and {pressure} (a ratio) placeholders.",
    )

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        check_template(value)
        return value


def check_template(template: str) -> None:
    """Raise ``ValueError`` naming the fix when ``template`` does not format with the four placeholders."""
    try:
        template.format(total=1, used=1, remaining=0, pressure=1.0)
    except KeyError as exc:
        raise ValueError(
            f"unknown placeholder '{{{exc.args[0]}}}'; use {{total}}, {{used}}, {{remaining}}, {{pressure}} (write {{{{ }}}} for literal braces)"
        ) from None
    except (ValueError, IndexError) as exc:
        raise ValueError(
            f"not a valid template ({exc}); use {{total}}, {{used}}, {{remaining}}, {{pressure}} (write {{{{ }}}} for literal braces)"
        ) from None


class BudgetHint:
    """Appends a short message stating the budget, the tokens used and the pressure."""

    def __init__(self, max_tokens: int | None = None, role: Literal["user", "system"] = "user", template: str = DEFAULT_TEMPLATE) -> None:
        template.format(total=1, used=1, remaining=0, pressure=1.0)  # fail at configuration time
        self.max_tokens = max_tokens
        self.role = role
        self.template = template

    def apply(self, messages: Sequence[Message], ctx: FilterContext) -> list[Message]:
        """Return ``messages`` plus the hint, or unchanged (with a report warning) when it does not fit."""
        total = self.max_tokens if self.max_tokens is not None else ctx.budget
        if total is None:
            raise ValueError("no token budget: set max_tokens or the pipeline's model.context_window")
        out = [m for m in messages if m.metadata.get("ctxcore") != HINT_MARKER]
        base = ctx.counter.count_messages(out)
        hint = self._hint(total, base)
        hint = self._hint(total, base + ctx.counter.count_message(hint))
        used = base + ctx.counter.count_message(hint)
        if used > total:
            if ctx.report is not None:
                ctx.report.warnings.append(
                    f"budget_hint '{ctx.step_id}': left out, the hint would bring the request to {used} of {total} tokens"
                )
            return out
        return [*out, hint]

    def _hint(self, total: int, used: int) -> Message:
        text = self.template.format(total=total, used=used, remaining=max(0, total - used), pressure=used / total if total else 1.0)
        digest = hashlib.blake2b(f"budget_hint\0{text}".encode(), digest_size=16).hexdigest()
        return Message(id=digest, role=self.role, content=text, metadata={"ctxcore": HINT_MARKER}, priority=0)
