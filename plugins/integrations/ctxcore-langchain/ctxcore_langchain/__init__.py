"""ctxcore inside LangChain 1.x and LangGraph: an agent middleware, a ``pre_model_hook`` and lossless converters.

See docs/integrations.md ("LangChain and LangGraph").
"""

from ctxcore_langchain.adapter import REPORT_EVENT, ContextBudgetExceeded, ContextHook, ContextMiddleware
from ctxcore_langchain.cache import ConversionCache
from ctxcore_langchain.converters import LANGCHAIN_KEY, from_langchain, to_langchain

__all__ = [
    "LANGCHAIN_KEY",
    "REPORT_EVENT",
    "ContextBudgetExceeded",
    "ContextHook",
    "ContextMiddleware",
    "ConversionCache",
    "from_langchain",
    "to_langchain",
]
