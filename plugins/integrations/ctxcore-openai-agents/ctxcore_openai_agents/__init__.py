"""ctxcore inside the OpenAI Agents SDK (docs/integrations.md, "OpenAI Agents SDK").

- :class:`ContextFilter`: ``RunConfig(call_model_input_filter=ContextFilter(pipeline))`` builds every
  model call's input with a ctxcore pipeline;
- :class:`CheckpointerSession`: the SDK's ``Session`` on a ctxcore thread log (SQLite, JSONL, PostgreSQL, Redis, memory);
- :func:`messages_from_items` / :func:`items_from_messages`: lossless Responses input items <-> ctxcore messages.
"""

from __future__ import annotations

from ctxcore_openai_agents.cache import ConversionCache
from ctxcore_openai_agents.converters import items_from_messages, messages_from_items
from ctxcore_openai_agents.errors import ContextBudgetExceeded, UnsupportedItem
from ctxcore_openai_agents.filter import ContextFilter, FilteredInput
from ctxcore_openai_agents.session import CheckpointerSession

__all__ = [
    "CheckpointerSession",
    "ContextBudgetExceeded",
    "ContextFilter",
    "ConversionCache",
    "FilteredInput",
    "UnsupportedItem",
    "items_from_messages",
    "messages_from_items",
]
