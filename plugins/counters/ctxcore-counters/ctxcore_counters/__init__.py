"""Token counters for ctxcore: ``approximate`` (no dependency) and ``tiktoken`` (offline)."""

from ctxcore_counters.approximate import ApproximateConfig, ApproximateCounter
from ctxcore_counters.tiktoken_counter import EncodingUnavailable, TiktokenConfig, TiktokenCounter

__all__ = [
    "ApproximateConfig",
    "ApproximateCounter",
    "EncodingUnavailable",
    "TiktokenConfig",
    "TiktokenCounter",
]
