"""HuggingFace token counter for ctxcore (``huggingface``): local tokenizers, chat templates."""

from ctxcore_counter_hf.counter import (
    HuggingFaceConfig,
    HuggingFaceCounter,
    TokenizerUnavailable,
)

__all__ = ["HuggingFaceConfig", "HuggingFaceCounter", "TokenizerUnavailable"]
