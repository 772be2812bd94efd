"""Token counters for ctxcore: ``approximate`` (no dependency) and ``tiktoken`` (offline)."""

from ctxcore_counters.approximate import ApproximateConfig, ApproximateCounter
from ctxcore_counters.encodings import (
    MODEL_ENCODINGS,
    EncodingUnavailable,
    encoding_for_model,
    load_encoding,
)
from ctxcore_counters.tiktoken_counter import TiktokenConfig, TiktokenCounter

__all__ = [
    "ApproximateConfig",
    "ApproximateCounter",
    "EncodingUnavailable",
    "MODEL_ENCODINGS",
    "TiktokenConfig",
    "TiktokenCounter",
    "encoding_for_model",
    "load_encoding",
]
