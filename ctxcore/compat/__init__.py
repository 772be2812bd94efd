"""The reference systems' names (Jianmu, nanobot, ChachaAgent), on ctxcore's own components.

Code written against the reference APIs keeps its names and signatures:
``from ctxcore.compat import SimpleStore, TokenBudgetFilter, ...``. Every class
creates the matching ctxcore component through the plugin registry (so the
core imports no plugin; a missing plugin raises ``PluginError`` naming the
distribution to install) and adds nothing but the reference signature and
return shapes: there is no second engine. Each docstring says where ctxcore
deliberately differs (errors are raised, not swallowed; untrusted text never
becomes a system message). The name-by-name map is docs/porting.md.

Layer: beside ``tools`` and ``testing``; nothing in ctxcore imports it.

May import: every layer below it (errors, model, render, engine, kit, plugins,
pipeline, runtime); not its siblings ``tools`` and ``testing``, nor ``cli``.
"""

from __future__ import annotations

from ctxcore.compat.chacha import (
    AssembledContext,
    ContextConfig,
    ContextManager,
    ConversationState,
    MemoryManager,
    MessageEvent,
)
from ctxcore.compat.checkpointers import FileCheckpointer, InMemoryCheckpointer, NullCheckpointer
from ctxcore.compat.counters import HFTokenCounter, SimpleTokenCounter, TiktokenTokenCounter
from ctxcore.compat.filters import MaxMessagesFilter, TokenBudgetFilter
from ctxcore.compat.memory import Mem0LongTermMemory, MemoryAddTool, MemorySearchTool, SimpleStore, create_memory_tools
from ctxcore.compat.messages import ai, human, system, tool
from ctxcore.compat.protocols import ContextFilter, Message, MessageProvider, TokenCounterProtocol
from ctxcore.compat.providers import (
    BootstrapFilesProvider,
    SkillSetPromptProvider,
    StateHistoryProvider,
    StaticPromptProvider,
    ToolsDescProvider,
)

__all__ = [
    "AssembledContext",
    "BootstrapFilesProvider",
    "ContextConfig",
    "ContextFilter",
    "ContextManager",
    "ConversationState",
    "FileCheckpointer",
    "HFTokenCounter",
    "InMemoryCheckpointer",
    "MaxMessagesFilter",
    "Message",
    "MessageEvent",
    "MessageProvider",
    "Mem0LongTermMemory",
    "MemoryAddTool",
    "MemoryManager",
    "MemorySearchTool",
    "NullCheckpointer",
    "SimpleStore",
    "SimpleTokenCounter",
    "SkillSetPromptProvider",
    "StateHistoryProvider",
    "StaticPromptProvider",
    "TiktokenTokenCounter",
    "TokenBudgetFilter",
    "TokenCounterProtocol",
    "ToolsDescProvider",
    "ai",
    "create_memory_tools",
    "human",
    "system",
    "tool",
]
