"""``anthropic_count`` and ``openai_count``: exact input-token counts from the provider's own count endpoint.

Each counter calls the official SDK client the user configures
(``client.messages.count_tokens`` / ``client.responses.input_tokens.count``),
so the counts are the provider's, for calibrating a local counter or where an
exact count matters more than a network round trip. A message is counted as the
difference between a request holding it and the same request without it (the
smallest legal context: a user turn ``"."`` first, and for a tool result the
call it answers), and each message's count is cached by its fingerprint, so a
growing conversation costs one call per new message. Nothing touches the
network at import or construction; the first count does. Why differences:
both endpoints count whole requests only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import Message, MessageCounter, ai, human, to_anthropic, to_openai_responses, tool
from ctxcore.kit import ToolCall

__all__ = ["AnthropicCountCounter", "OpenAICountCounter", "ProviderCountConfig", "ProviderCountError"]

#: how many message counts each counter keeps (the builder's count cache keeps more, by name and fingerprint).
CACHE_SIZE = 4096


class ProviderCountError(RuntimeError):
    """A provider count failed: the message names the counter, the cause and the fix."""


class ProviderCountConfig(BaseModel):
    """Options of ``anthropic_count`` and ``openai_count`` (the SDK client is built from them at the first count)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="The model whose tokenizer counts (sent to the count endpoint).")
    base_url: str | None = Field(default=None, description="API base URL (default: the SDK's, or its *_BASE_URL variable).")
    api_key_env: str | None = Field(default=None, description="Environment variable holding the API key (default: the SDK's).")
    timeout: float = Field(default=30.0, gt=0, description="Seconds per count request.")
    max_retries: int = Field(default=2, ge=0, description="Retries of a failed count request.")


class _ProviderCounter(MessageCounter):
    """Per-message counts from a count endpoint, by difference from a fixed context (see the module doc)."""

    provider = ""

    def __init__(self, model: str, *, client: Any = None, make_client: Callable[[], Any] | None = None) -> None:
        self.model = model
        self.name = f"{self.counter_id}:{model}"
        self._client = client
        self._make_client = make_client
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._base: dict[str, int] = {}
        self.reply_priming = 0

    counter_id = ""

    @property
    def client(self) -> Any:
        """The SDK client: the one given, else made from the config at first use."""
        if self._client is None:
            if self._make_client is None:
                raise ProviderCountError(f"counter {self.counter_id!r}: no client; pass client= or a config")
            self._client = self._make_client()
        return self._client

    def count_text(self, text: str) -> int:
        """Tokens of ``text`` as a user turn's text."""
        return self.count_message(human(text)) if text else 0

    def count_message(self, message: Message) -> int:
        """Tokens the provider counts for ``message`` in a request (cached by fingerprint)."""
        key = message.fingerprint
        if key in self._counts:
            self._counts.move_to_end(key)
            return self._counts[key]
        before, after, base = _context_for(message)
        value = max(self._request(before + [message] + after, ()) - self._baseline(base), 0)
        self._counts[key] = value
        if len(self._counts) > CACHE_SIZE:
            self._counts.popitem(last=False)
        return value

    def count_messages(self, messages: Sequence[Message]) -> int:
        """The sum of the messages' counts (the provider's per-request overhead is left out)."""
        return sum(self.count_message(m) for m in messages)

    def count_tools(self, tool_schemas: Sequence[Mapping[str, Any]]) -> int:
        """Tokens the provider counts for these tool definitions."""
        if not tool_schemas:
            return 0
        return max(self._request([human(".")], tuple(tool_schemas)) - self._baseline([human(".")]), 0)

    def _baseline(self, context: list[Message]) -> int:
        key = "|".join(m.fingerprint for m in context)
        if key not in self._base:
            self._base[key] = self._request(context, ())
        return self._base[key]

    def _request(self, messages: list[Message], tools: Sequence[Mapping[str, Any]]) -> int:
        try:
            return int(self._count(messages, tools))
        except ProviderCountError:
            raise
        except Exception as exc:  # the SDK's connection, auth and status errors: named, with the fix
            raise ProviderCountError(
                f"counter {self.counter_id!r} ({self.model}): the {self.provider} count endpoint failed: "
                f"{type(exc).__name__}: {exc}. It needs network access and an API key for {self.provider}; "
                "offline, use the 'tiktoken' or 'approximate' counter instead"
            ) from exc

    def _count(self, messages: list[Message], tools: Sequence[Mapping[str, Any]]) -> int:
        raise NotImplementedError


def _context_for(message: Message) -> tuple[list[Message], list[Message], list[Message]]:
    """The smallest legal request around ``message`` (before, after) and the request to subtract.

    A user turn ``"."`` starts every request. An assistant message with tool
    calls is followed by an empty result per call (their wrappers count with
    the calls); a tool result is preceded by its call and measured against an
    empty result, so a call and its result add up to the pair's count.
    """
    start = human(".")
    if message.role == "tool":
        call_id = message.tool_call_id or "call_0"
        call = ai("", tool_calls=[ToolCall(id=call_id, name=message.name or "tool", arguments="{}")])
        return [start, call], [], [start, call, tool("", tool_call_id=call_id)]
    if message.role == "assistant" and message.tool_calls:
        return [start], [tool("", tool_call_id=c.id) for c in message.tool_calls], [start]
    return [start], [], [start]


class AnthropicCountCounter(_ProviderCounter):
    """Counts from ``client.messages.count_tokens`` of an ``anthropic.Anthropic`` client."""

    counter_id = "anthropic_count"
    provider = "Anthropic"

    def _count(self, messages: list[Message], tools: Sequence[Mapping[str, Any]]) -> int:
        body = to_anthropic(messages, tools)
        return self.client.messages.count_tokens(model=self.model, **body).input_tokens  # type: ignore[no-any-return]


class OpenAICountCounter(_ProviderCounter):
    """Counts from ``client.responses.input_tokens.count`` of an ``openai.OpenAI`` client."""

    counter_id = "openai_count"
    provider = "OpenAI"

    def _count(self, messages: list[Message], tools: Sequence[Mapping[str, Any]]) -> int:
        body = to_openai_responses(messages, tools)
        return self.client.responses.input_tokens.count(model=self.model, **body).input_tokens  # type: ignore[no-any-return]


def anthropic_client(config: ProviderCountConfig) -> Callable[[], Any]:
    """A maker of the ``anthropic.Anthropic`` client the config describes (imported when first called)."""

    def make() -> Any:
        anthropic = _sdk("anthropic", "anthropic_count")
        return anthropic.Anthropic(**_client_options(config))

    return make


def openai_client(config: ProviderCountConfig) -> Callable[[], Any]:
    """A maker of the ``openai.OpenAI`` client the config describes (imported when first called)."""

    def make() -> Any:
        openai = _sdk("openai", "openai_count")
        return openai.OpenAI(**_client_options(config))

    return make


def _client_options(config: ProviderCountConfig) -> dict[str, Any]:
    import os

    options: dict[str, Any] = {"timeout": config.timeout, "max_retries": config.max_retries}
    if config.base_url:
        options["base_url"] = config.base_url
    if config.api_key_env:
        key = os.environ.get(config.api_key_env)
        if not key:
            raise ProviderCountError(f"api_key_env {config.api_key_env!r} is not set: export it with the API key")
        options["api_key"] = key
    return options


def _sdk(module: str, counter: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ProviderCountError(f"counter {counter!r} needs the official SDK: pip install {module}") from None
