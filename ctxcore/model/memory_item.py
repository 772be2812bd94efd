"""One stored long-term memory: :class:`MemoryItem`, what every memory store returns.

It sits in the model layer because the component contracts
(:class:`ctxcore.engine.protocols.MemoryStore`) name it; the checks that stores
share live in :mod:`ctxcore.kit.memory`, the service an agent talks to in
:mod:`ctxcore.runtime.memory_service`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_NAMESPACE", "MemoryItem", "utc_now"]

#: namespace used when a call names none.
DEFAULT_NAMESPACE = "default"


def utc_now() -> datetime:
    """The current time, timezone-aware UTC (what ``created_at`` holds)."""
    return datetime.now(timezone.utc)


class MemoryItem(BaseModel):
    """One stored memory. ``score`` is set on retrieved items (higher is more relevant)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    namespace: str = DEFAULT_NAMESPACE
    created_at: datetime = Field(default_factory=lambda: utc_now())
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``created_at`` as ISO 8601)."""
        return self.model_dump(mode="json")
