"""Building blocks every component kind shares."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["EmptyConfig"]


class EmptyConfig(BaseModel):
    """Config model of a component that takes no options."""

    model_config = ConfigDict(extra="forbid")
