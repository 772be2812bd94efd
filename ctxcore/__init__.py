"""ctxcore: build the input of every LLM call an agent makes.

Providers contribute messages, filters fit them to the model's budget without
splitting tool calls from their results, and every build returns a report of
what each component added, dropped and cost. Plugins register components
through the ``ctxcore`` entry-point group; YAML pipelines compose them by name.

This module is the user's surface (a pinned ``__all__``). The code lives in
layers that import only downward (docs/architecture.md): ``errors`` and
``redaction``, then ``model``, ``render``, ``engine``, ``kit`` (the plugin
author's surface), ``plugins``, ``pipeline``, ``runtime``, ``tools`` and
``cli``, with ``testing`` beside ``tools``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names, for type checkers and IDEs; at run time they load on first use
    from ctxcore.engine.budget import CachedCounter, CountCache, FilterContext, ModelBudget
    from ctxcore.engine.builder import BuiltContext, ContextBuilder, Step
    from ctxcore.engine.counting import MessageCounter
    from ctxcore.engine.pressure import PressureLevel, recommended_level
    from ctxcore.engine.protocols import (
        Checkpointer,
        Filter,
        MemoryStore,
        Provider,
        Summarizer,
        TokenCounter,
    )
    from ctxcore.engine.reference import reference_build
    from ctxcore.engine.report import BuildReport, MessageRecord
    from ctxcore.errors import (
        BudgetExceeded,
        CheckpointCorrupt,
        ComponentConflict,
        ComponentError,
        ConfigError,
        ConfigIssue,
        CtxError,
        InvalidHistory,
        MemoryCorrupt,
        PluginError,
        ScaffoldError,
        StaleWrite,
        TranscriptError,
        UnknownComponent,
        UnstorableState,
    )
    from ctxcore.kit.offload import context_retrieve_tool, resolve_handle, run_context_retrieve
    from ctxcore.model.anthropic_io import messages_from_anthropic
    from ctxcore.model.blocks import ProviderBlock, without_provider_blocks
    from ctxcore.model.memory_item import MemoryItem
    from ctxcore.model.messages import (
        ContentBlock,
        FileBlock,
        ImageBlock,
        Message,
        TextBlock,
        ToolCall,
        ai,
        human,
        system,
        tool,
    )
    from ctxcore.model.responses_io import messages_from_responses
    from ctxcore.model.transactions import (
        LegalStart,
        SanitizeResult,
        Unit,
        check_tool_pairing,
        group_units,
        legal_start,
        sanitize_tool_call_history,
    )
    from ctxcore.pipeline.presets import PromptRuntimeContext
    from ctxcore.pipeline.spec import Pipeline, PipelineSpec
    from ctxcore.plugins.hookspecs import hookimpl
    from ctxcore.plugins.host import PluginHost, PluginInfo
    from ctxcore.plugins.registry import Component, Registry
    from ctxcore.render import to_anthropic, to_openai, to_openai_responses, validate_request
    from ctxcore.render.target import TargetSpec
    from ctxcore.runtime.memory_service import MemoryService
    from ctxcore.runtime.memory_tools import create_memory_tools
    from ctxcore.runtime.message_store import StateMessageStore
    from ctxcore.runtime.threads import Thread

__version__ = "0.1.0"

__all__ = [
    "UnstorableState",
    "ComponentConflict",
    "UnknownComponent",
    "TranscriptError",
    "ScaffoldError",
    "BudgetExceeded",
    "BuildReport",
    "BuiltContext",
    "CachedCounter",
    "CountCache",
    "CheckpointCorrupt",
    "Checkpointer",
    "Component",
    "ComponentError",
    "ConfigError",
    "ConfigIssue",
    "ContentBlock",
    "ContextBuilder",
    "CtxError",
    "FileBlock",
    "Filter",
    "FilterContext",
    "ImageBlock",
    "InvalidHistory",
    "LegalStart",
    "MemoryCorrupt",
    "MemoryItem",
    "MemoryService",
    "MemoryStore",
    "Message",
    "MessageCounter",
    "MessageRecord",
    "ModelBudget",
    "Pipeline",
    "PipelineSpec",
    "PluginError",
    "PressureLevel",
    "PluginHost",
    "PluginInfo",
    "Provider",
    "Registry",
    "PromptRuntimeContext",
    "SanitizeResult",
    "StaleWrite",
    "StateMessageStore",
    "Step",
    "Summarizer",
    "TargetSpec",
    "TextBlock",
    "Thread",
    "TokenCounter",
    "ToolCall",
    "Unit",
    "ai",
    "check_tool_pairing",
    "context_retrieve_tool",
    "create_memory_tools",
    "group_units",
    "hookimpl",
    "human",
    "legal_start",
    "messages_from_anthropic",
    "messages_from_responses",
    "ProviderBlock",
    "without_provider_blocks",
    "recommended_level",
    "reference_build",
    "resolve_handle",
    "run_context_retrieve",
    "sanitize_tool_call_history",
    "system",
    "to_anthropic",
    "to_openai",
    "to_openai_responses",
    "tool",
    "validate_request",
    "__version__",
]

#: where each public name lives: ``import ctxcore`` loads none of them (a fast start for the CLI
#: and serverless cold starts); ``ctxcore.Message`` or ``from ctxcore import Message`` loads its module.
_WHERE: dict[str, str] = {
    "CachedCounter": "ctxcore.engine.budget",
    "CountCache": "ctxcore.engine.budget",
    "FilterContext": "ctxcore.engine.budget",
    "ModelBudget": "ctxcore.engine.budget",
    "BuiltContext": "ctxcore.engine.builder",
    "ContextBuilder": "ctxcore.engine.builder",
    "Step": "ctxcore.engine.builder",
    "MessageCounter": "ctxcore.engine.counting",
    "PressureLevel": "ctxcore.engine.pressure",
    "recommended_level": "ctxcore.engine.pressure",
    "Checkpointer": "ctxcore.engine.protocols",
    "Filter": "ctxcore.engine.protocols",
    "MemoryStore": "ctxcore.engine.protocols",
    "Provider": "ctxcore.engine.protocols",
    "Summarizer": "ctxcore.engine.protocols",
    "TokenCounter": "ctxcore.engine.protocols",
    "reference_build": "ctxcore.engine.reference",
    "BuildReport": "ctxcore.engine.report",
    "MessageRecord": "ctxcore.engine.report",
    "BudgetExceeded": "ctxcore.errors",
    "context_retrieve_tool": "ctxcore.kit.offload",
    "resolve_handle": "ctxcore.kit.offload",
    "run_context_retrieve": "ctxcore.kit.offload",
    "ProviderBlock": "ctxcore.model.blocks",
    "without_provider_blocks": "ctxcore.model.blocks",
    "CheckpointCorrupt": "ctxcore.errors",
    "ComponentConflict": "ctxcore.errors",
    "ComponentError": "ctxcore.errors",
    "ConfigError": "ctxcore.errors",
    "ConfigIssue": "ctxcore.errors",
    "CtxError": "ctxcore.errors",
    "InvalidHistory": "ctxcore.errors",
    "MemoryCorrupt": "ctxcore.errors",
    "PluginError": "ctxcore.errors",
    "ScaffoldError": "ctxcore.errors",
    "StaleWrite": "ctxcore.errors",
    "TranscriptError": "ctxcore.errors",
    "UnknownComponent": "ctxcore.errors",
    "UnstorableState": "ctxcore.errors",
    "messages_from_anthropic": "ctxcore.model.anthropic_io",
    "MemoryItem": "ctxcore.model.memory_item",
    "ContentBlock": "ctxcore.model.messages",
    "FileBlock": "ctxcore.model.messages",
    "ImageBlock": "ctxcore.model.messages",
    "Message": "ctxcore.model.messages",
    "TextBlock": "ctxcore.model.messages",
    "ToolCall": "ctxcore.model.messages",
    "ai": "ctxcore.model.messages",
    "human": "ctxcore.model.messages",
    "system": "ctxcore.model.messages",
    "tool": "ctxcore.model.messages",
    "messages_from_responses": "ctxcore.model.responses_io",
    "LegalStart": "ctxcore.model.transactions",
    "SanitizeResult": "ctxcore.model.transactions",
    "Unit": "ctxcore.model.transactions",
    "check_tool_pairing": "ctxcore.model.transactions",
    "group_units": "ctxcore.model.transactions",
    "legal_start": "ctxcore.model.transactions",
    "sanitize_tool_call_history": "ctxcore.model.transactions",
    "PromptRuntimeContext": "ctxcore.pipeline.presets",
    "Pipeline": "ctxcore.pipeline.spec",
    "PipelineSpec": "ctxcore.pipeline.spec",
    "hookimpl": "ctxcore.plugins.hookspecs",
    "PluginHost": "ctxcore.plugins.host",
    "PluginInfo": "ctxcore.plugins.host",
    "Component": "ctxcore.plugins.registry",
    "Registry": "ctxcore.plugins.registry",
    "to_anthropic": "ctxcore.render",
    "to_openai": "ctxcore.render",
    "to_openai_responses": "ctxcore.render",
    "validate_request": "ctxcore.render",
    "TargetSpec": "ctxcore.render.target",
    "MemoryService": "ctxcore.runtime.memory_service",
    "create_memory_tools": "ctxcore.runtime.memory_tools",
    "StateMessageStore": "ctxcore.runtime.message_store",
    "Thread": "ctxcore.runtime.threads",
}

_logging_ready = False


def __getattr__(name: str) -> Any:
    """Load a public name on first use (PEP 562), and the library's logging default with the first one."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxcore' has no attribute {name!r}")
    _ensure_default_logging()
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


def _ensure_default_logging() -> None:
    """Apply the library's logging default once (stderr, warning and above, redacted; see docs/logging.md).

    Called with the first public name a program uses, and by ``ctxcore.kit``, rather than on
    ``import ctxcore``: structlog imports rich, which only a program that logs should pay for.
    An application that configured structlog first keeps its own set-up.
    """
    global _logging_ready
    if not _logging_ready:
        _logging_ready = True
        from ctxcore.runtime.logging_setup import configure_default_logging

        configure_default_logging()
