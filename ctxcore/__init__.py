"""ctxcore: build the input of every LLM call an agent makes.

Providers contribute messages, filters fit them to the model's budget without
splitting tool calls from their results, and every build returns a report of
what each component added, dropped and cost. Plugins register components
through the ``ctxcore`` entry-point group; YAML pipelines compose them by name.
"""

from ctxcore.budget import CachedCounter, CountCache, FilterContext, ModelBudget
from ctxcore.builder import BuiltContext, ContextBuilder, Step
from ctxcore.counting import MessageCounter
from ctxcore.errors import (
    BudgetExceeded,
    CheckpointCorrupt,
    ComponentError,
    ConfigError,
    ConfigIssue,
    CtxError,
    InvalidHistory,
    MemoryCorrupt,
    PluginError,
    StaleWrite,
)
from ctxcore.hookspecs import hookimpl
from ctxcore.message_store import StateMessageStore
from ctxcore.messages import (
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
from ctxcore.memory import MemoryItem, MemoryService
from ctxcore.memory_tools import create_memory_tools
from ctxcore.pipeline import Pipeline, PipelineSpec
from ctxcore.presets import PromptRuntimeContext
from ctxcore.plugins import PluginHost, PluginInfo
from ctxcore.protocols import Checkpointer, Filter, MemoryStore, Provider, Summarizer, TokenCounter
from ctxcore.registry import Component, Registry
from ctxcore.render import to_anthropic, to_openai, validate_request
from ctxcore.report import BuildReport, MessageRecord
from ctxcore.target import TargetSpec
from ctxcore.transactions import (
    LegalStart,
    SanitizeResult,
    Unit,
    check_tool_pairing,
    group_units,
    legal_start,
    sanitize_tool_call_history,
)

__version__ = "0.1.0"

__all__ = [
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
    "TokenCounter",
    "ToolCall",
    "Unit",
    "ai",
    "check_tool_pairing",
    "create_memory_tools",
    "group_units",
    "hookimpl",
    "human",
    "legal_start",
    "sanitize_tool_call_history",
    "system",
    "to_anthropic",
    "to_openai",
    "tool",
    "validate_request",
    "__version__",
]

# Library default: ctxcore's log events go to stderr at warning and above, redacted,
# unless the application configured structlog itself (see docs/logging.md).
from ctxcore.logging_setup import configure_default_logging as _configure_default_logging  # noqa: E402

_configure_default_logging()
