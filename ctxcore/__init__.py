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
from ctxcore.pipeline import Pipeline, PipelineSpec
from ctxcore.presets import PromptRuntimeContext
from ctxcore.plugins import PluginHost, PluginInfo
from ctxcore.protocols import Checkpointer, Filter, MemoryStore, Provider, Summarizer, TokenCounter
from ctxcore.registry import Component, Registry
from ctxcore.report import BuildReport, MessageRecord
from ctxcore.transactions import Unit, check_tool_pairing, group_units

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
    "StaleWrite",
    "StateMessageStore",
    "Step",
    "Summarizer",
    "TextBlock",
    "TokenCounter",
    "ToolCall",
    "Unit",
    "ai",
    "check_tool_pairing",
    "group_units",
    "hookimpl",
    "human",
    "system",
    "tool",
    "__version__",
]
