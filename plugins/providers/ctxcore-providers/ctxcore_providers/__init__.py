"""Providers for ctxcore, and the preset pipelines (chat, react, skill, agent)."""

from ctxcore_providers._markers import (
    CLOSE_MARKER,
    OPEN_MARKER,
    neutralize_markers,
    strip_runtime_blocks,
)
from ctxcore_providers.bootstrap import BootstrapFiles, BootstrapFilesConfig
from ctxcore_providers.history import History, HistoryConfig
from ctxcore_providers.identity import Identity, IdentityConfig
from ctxcore_providers.media import attachment_blocks, sniff_image_type
from ctxcore_providers.memory import (
    ArchivedSummary,
    ArchivedSummaryConfig,
    MemoryFile,
    MemoryFileConfig,
    MemoryRecall,
    MemoryRecallConfig,
    RecentMemory,
    RecentMemoryConfig,
)
from ctxcore_providers.runtime_context import RuntimeContext, RuntimeContextConfig
from ctxcore_providers.sections import Sections, SectionsConfig
from ctxcore_providers.skills import Skills, SkillsConfig
from ctxcore_providers.skills_catalog import Skill, SkillsCatalog
from ctxcore_providers.static_prompt import StaticPrompt, StaticPromptConfig
from ctxcore_providers.tools_desc import ToolsDesc, ToolsDescConfig, render_tools

__all__ = [
    "ArchivedSummary", "ArchivedSummaryConfig", "BootstrapFiles", "BootstrapFilesConfig", "CLOSE_MARKER",
    "History", "HistoryConfig", "Identity", "IdentityConfig", "MemoryFile", "MemoryFileConfig", "MemoryRecall",
    "MemoryRecallConfig", "OPEN_MARKER", "RecentMemory", "RecentMemoryConfig", "RuntimeContext", "RuntimeContextConfig",
    "Sections", "SectionsConfig", "Skill", "Skills", "SkillsCatalog", "SkillsConfig", "StaticPrompt", "StaticPromptConfig",
    "ToolsDesc", "ToolsDescConfig", "attachment_blocks", "neutralize_markers", "render_tools", "sniff_image_type",
    "strip_runtime_blocks",
]
