"""Entry point of ctxcore-counters: registers ``approximate`` and ``tiktoken``."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl
from ctxcore_counters.approximate import ApproximateConfig
from ctxcore_counters.tiktoken_counter import TiktokenConfig


def _approximate(config: ApproximateConfig) -> Any:
    from ctxcore_counters.approximate import ApproximateCounter

    return ApproximateCounter(config.family, chars_per_token=config.chars_per_token)


def _tiktoken(config: TiktokenConfig) -> Any:
    from ctxcore_counters.tiktoken_counter import TiktokenCounter

    return TiktokenCounter(config.encoding, model=config.model, bpe_file=config.bpe_file)


@hookimpl
def register_token_counters(register: Any) -> None:
    """Offer the approximate and tiktoken counters."""
    register("approximate", _approximate, config=ApproximateConfig,
             description="Script-aware estimate calibrated on cl100k/o200k (family:), or chars_per_token: plain; no dependency.")
    register("tiktoken", _tiktoken, config=TiktokenConfig,
             description="Exact OpenAI counts (cl100k_base, o200k_base), loaded offline.")
