"""Entry point of ctxcore-counters: registers ``approximate``, ``tiktoken``, ``anthropic_count`` and ``openai_count``."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore_counters.approximate import ApproximateConfig
from ctxcore_counters.provider_counts import ProviderCountConfig
from ctxcore_counters.tiktoken_counter import TiktokenConfig


def _approximate(config: ApproximateConfig) -> Any:
    from ctxcore_counters.approximate import ApproximateCounter

    return ApproximateCounter(config.family, chars_per_token=config.chars_per_token)


def _tiktoken(config: TiktokenConfig) -> Any:
    from ctxcore_counters.tiktoken_counter import TiktokenCounter

    return TiktokenCounter(config.encoding, model=config.model, bpe_file=config.bpe_file)


def _anthropic_count(config: ProviderCountConfig) -> Any:
    from ctxcore_counters.provider_counts import AnthropicCountCounter, anthropic_client

    return AnthropicCountCounter(config.model, make_client=anthropic_client(config))


def _openai_count(config: ProviderCountConfig) -> Any:
    from ctxcore_counters.provider_counts import OpenAICountCounter, openai_client

    return OpenAICountCounter(config.model, make_client=openai_client(config))


@hookimpl
def register_token_counters(register: Any) -> None:
    """Offer the approximate, tiktoken and provider-count counters."""
    register("approximate", _approximate, config=ApproximateConfig,
             description="Script-aware estimate calibrated on cl100k/o200k (family:), or chars_per_token: plain; no dependency.")
    register("tiktoken", _tiktoken, config=TiktokenConfig,
             description="Exact OpenAI counts (cl100k_base, o200k_base), loaded offline.")
    register("anthropic_count", _anthropic_count, config=ProviderCountConfig,
             description="Exact Anthropic counts from messages.count_tokens (network and API key; cached per message).")
    register("openai_count", _openai_count, config=ProviderCountConfig,
             description="Exact OpenAI counts from responses.input_tokens.count (network and API key; cached per message).")
