"""HuggingFace token counter for ctxcore (``huggingface``): local tokenizers, chat templates.

The names load on first use (PEP 562), as ``plugin.py``'s factory does: loading
the plugins for a pipeline that counts with another counter never imports the
counter, its chat-template renderer or jinja2.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxcore_counter_hf.config import HuggingFaceConfig
    from ctxcore_counter_hf.counter import HuggingFaceCounter, TokenizerUnavailable

__all__ = ["HuggingFaceConfig", "HuggingFaceCounter", "TokenizerUnavailable"]

_LAZY = {"HuggingFaceConfig": "ctxcore_counter_hf.config", "HuggingFaceCounter": "ctxcore_counter_hf.counter",
         "TokenizerUnavailable": "ctxcore_counter_hf.counter"}


def __getattr__(name: str) -> Any:
    """Import a public name's module on first access (PEP 562)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
