"""ctxcore for pydantic-ai: every model request built by a ctxcore pipeline.

``Agent(model, capabilities=[ContextCapability(pipeline)])`` sends the model
the pipeline's window of the run's messages (legal, within budget, explained
by ``capability.last_report``) and leaves the run's history whole; the
history processors :class:`ContextProcessor` and :class:`AsyncContextProcessor`
fill ``ProcessHistory``. :func:`from_pydantic_ai` and :func:`to_pydantic_ai`
convert ``ModelMessage`` lists both ways, losslessly. See
docs/integrations.md#pydantic-ai.
"""

from __future__ import annotations

from ctxcore_pydantic_ai.cache import ConversionCache
from ctxcore_pydantic_ai.convert import METADATA_KEY, PydanticAIOrigin, from_pydantic_ai, to_pydantic_ai
from ctxcore_pydantic_ai.errors import ContextBudgetExceeded
from ctxcore_pydantic_ai.processor import AsyncContextProcessor, ContextCapability, ContextProcessor

__all__ = [
    "AsyncContextProcessor",
    "ContextBudgetExceeded",
    "ContextCapability",
    "ContextProcessor",
    "ConversionCache",
    "METADATA_KEY",
    "PydanticAIOrigin",
    "from_pydantic_ai",
    "to_pydantic_ai",
]
