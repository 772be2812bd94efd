"""Request rules per target provider: the pipeline's ``target:`` section.

The builder applies these after the filters, so every filter composes with
them: history sanitizing before the filters, the legal start and the
provider's validation as the last steps of every build.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ctxcore.render.validate import TargetProvider

__all__ = ["TargetSpec"]


class TargetSpec(BaseModel):
    """Which provider the request is for and which legality steps the builder runs.

    Attributes:
        provider: ``openai``, ``anthropic`` or ``openai-responses``; the build is validated for it.
        legal_start: make the first message after the system prefix a user
            message (on by default for every provider).
        recover_user: when the kept window starts with assistant or tool
            messages, put back the nearest earlier user message if it fits the
            budget, instead of advancing to the next user message.
        sanitize: what to do with broken past tool transactions: ``drop`` them,
            ``backfill`` missing results with an "interrupted" placeholder, or
            ``off`` (a broken history then fails validation).
        validate: run ``validate_request`` for ``provider`` before returning.
        cache: Anthropic prompt caching: ``auto`` marks up to 4 ``cache_control``
            breakpoints in ``to_anthropic()`` (docs/caching.md); ``off`` marks none.
            OpenAI caches automatically and ignores it.
        model: the model name; picks the minimum cacheable length for ``cache: auto``.
        cache_min_tokens: the minimum cacheable length to apply instead of the model's.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    provider: TargetProvider = "openai"
    legal_start: bool = True
    recover_user: bool = False
    sanitize: Literal["drop", "backfill", "off"] = "drop"
    validate_request: bool = Field(default=True, alias="validate")
    cache: Literal["auto", "off"] = "auto"
    model: str | None = None
    cache_min_tokens: int | None = Field(default=None, ge=1)
