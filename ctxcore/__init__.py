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

# Library default: ctxcore's log events go to stderr at warning and above, redacted,
# unless the application configured structlog itself (see docs/logging.md).
from ctxcore.runtime.logging_setup import (
    configure_default_logging as _configure_default_logging,  # noqa: E402
)

_configure_default_logging()
