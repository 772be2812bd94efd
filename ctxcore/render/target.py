"""Request rules per target provider: the pipeline's ``target:`` section.

The builder applies these after the filters, so every filter composes with
them: history sanitizing before the filters, the legal start and the
provider's validation as the last steps of every build.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ctxcore.model.messages import Message
from ctxcore.render.caching import TTL_ORDER, CachePlan, CacheTTL, min_cacheable_tokens, plan_anthropic_cache
from ctxcore.render.context_management import ContextManagementSpec, describe_context_management
from ctxcore.render.request import PromptCacheOptions
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
            breakpoints in ``to_anthropic()`` (docs/caching.md); ``top_level`` leaves
            the end of the request to the top-level automatic ``cache_control`` and
            marks the rest; ``off`` marks none. OpenAI caches automatically and ignores it.
        cache_ttl: the lifetime of the message breakpoints, ``5m`` or ``1h``.
        cache_prefix_ttl: the lifetime of the system and tools breakpoints
            (default ``cache_ttl``); it may not be shorter than ``cache_ttl``.
        cache_turn_ttl: the lifetime of a breakpoint on the last user message
            (``off``: none); the breakpoints before it take it too.
        model: the model name; picks the minimum cacheable length for ``cache: auto``
            and whether an OpenAI model takes ``prompt_cache_breakpoint``.
        cache_min_tokens: the minimum cacheable length to apply instead of the model's.
        prompt_cache_key: OpenAI ``prompt_cache_key``; default: the thread id of the build.
        prompt_cache_options: OpenAI ``prompt_cache_options`` (``mode``, ``ttl``).
        prompt_cache_breakpoints: ``auto`` marks OpenAI content blocks with
            ``prompt_cache_breakpoint`` for models that take it; ``off`` never.
        context_management: server-side context management (Anthropic edits,
            OpenAI compaction), see :mod:`ctxcore.render.context_management`.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    provider: TargetProvider = "openai"
    legal_start: bool = True
    recover_user: bool = False
    sanitize: Literal["drop", "backfill", "off"] = "drop"
    validate_request: bool = Field(default=True, alias="validate")
    cache: Literal["auto", "top_level", "off"] = "auto"
    cache_ttl: CacheTTL = "5m"
    cache_prefix_ttl: CacheTTL | None = None
    cache_turn_ttl: CacheTTL | Literal["off"] = "1h"
    model: str | None = None
    cache_min_tokens: int | None = Field(default=None, ge=1)
    prompt_cache_key: str | None = None
    prompt_cache_options: PromptCacheOptions | None = None
    prompt_cache_breakpoints: Literal["auto", "off"] = "auto"
    context_management: ContextManagementSpec | None = None

    @model_validator(mode="after")
    def _check_provider_settings(self) -> TargetSpec:
        """Refuse settings the target's provider would never send, and a 1h breakpoint after a 5m one."""
        if self.cache_prefix_ttl is not None and TTL_ORDER[self.cache_prefix_ttl] < TTL_ORDER[self.cache_ttl]:
            raise ValueError(
                f"cache_prefix_ttl {self.cache_prefix_ttl!r} is shorter than cache_ttl {self.cache_ttl!r}: Anthropic wants "
                "1h breakpoints before 5m ones; set cache_prefix_ttl: 1h or cache_ttl: 5m"
            )
        cm = self.context_management
        if cm is not None and cm.edits and self.provider != "anthropic":
            raise ValueError("context_management.edits are Anthropic edits: set provider: anthropic, or use compaction for OpenAI")
        if cm is not None and cm.compaction is not None and self.provider == "anthropic":
            raise ValueError("context_management.compaction is OpenAI's: for Anthropic use an edit of type compact_20260112")
        return self

    @property
    def bills_cache_writes(self) -> bool:
        """Whether requests carry breakpoints whose cache writes are billed (Anthropic with caching on).

        Under that pricing a rewrite of the cached prefix costs 1.25x while a
        read costs 0.1x, so components compact less often (``compaction``'s
        water marks default lower for such a target).
        """
        return self.provider == "anthropic" and self.cache != "off"

    def cache_plan(
        self, messages: Sequence[Message], tokens: Sequence[int], tool_tokens: int, has_tools: bool, reused: int,
        extends: bool = False,
    ) -> CachePlan | None:
        """The Anthropic breakpoints of a build under these settings (``None`` unless Anthropic with caching on).

        ``reused`` is how many leading non-system messages equal the previous
        build's of the same thread; ``extends``, whether the previous build is
        a prefix of this one. Each message counts as its content blocks plus
        its tool calls for the 20-block lookback.
        """
        if self.provider != "anthropic" or self.cache == "off":
            return None
        blocks = [max(1, (len(m.content) if isinstance(m.content, list) else 1) + len(m.tool_calls)) for m in messages]
        return plan_anthropic_cache(
            [m.role for m in messages], tokens, tool_tokens, has_tools, reused,
            self.cache_min_tokens or min_cacheable_tokens(self.model), blocks=blocks, ttl=self.cache_ttl,
            prefix_ttl=self.cache_prefix_ttl, top_level=self.cache == "top_level",
            turn_ttl=None if self.cache_turn_ttl == "off" else self.cache_turn_ttl, extends=extends,
        )

    def server_notes(self, tokens: int | None = None) -> list[str]:
        """What the provider's server will do to the request (context management), one report sentence each.

        ``tokens``: the request's input tokens, to say which triggers this request reaches.
        """
        if self.context_management is None:
            return []
        return describe_context_management(self.context_management, self.provider, tokens)
