"""Entry point of ctxcore-providers: registers the providers and the preset pipelines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxcore import hookimpl
from ctxcore_providers.bootstrap import BootstrapFiles, BootstrapFilesConfig
from ctxcore_providers.history import History, HistoryConfig
from ctxcore_providers.identity import Identity, IdentityConfig
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
from ctxcore_providers.sections import SectionsConfig, create_sections
from ctxcore_providers.skills import Skills, SkillsConfig
from ctxcore_providers.static_prompt import StaticPrompt, StaticPromptConfig
from ctxcore_providers.tools_desc import ToolsDesc, ToolsDescConfig

PRESETS_DIR = Path(__file__).parent / "presets"

PRESETS = {
    "chat": "persona -> bootstrap files (optional) -> history",
    "react": "persona -> ReAct protocol -> tools -> bootstrap files (optional) -> history",
    "skill": "persona -> ReAct protocol (optional) -> bootstrap files (optional) -> skills -> history",
    "agent": "a coding agent's ordered system prompt, then history, then the current message with its runtime block",
}


def _static_prompt(config: StaticPromptConfig) -> StaticPrompt:
    return StaticPrompt(config.resolved_text(), config.priority, allow_empty=config.prompt is not None)


def _tools_desc(c: ToolsDescConfig) -> ToolsDesc:
    return ToolsDesc(c.text, c.tools, state_key=c.state_key, template=c.template, priority=c.priority)


def _bootstrap(c: BootstrapFilesConfig) -> BootstrapFiles:
    return BootstrapFiles(c.workspace, c.files, user_dir=c.user_dir, subdir=c.subdir, max_bytes=c.max_bytes, imports=c.imports,
                          trust=c.trust, on_refused=c.on_refused, ttl_seconds=c.ttl_seconds, priority=c.priority)


def _identity(c: IdentityConfig) -> Identity:
    return Identity(c.workspace, c.channel, format_hints=c.format_hints, template=c.template, priority=c.priority)


def _history(config: HistoryConfig) -> History:
    return History(config.state_key, annotate=config.annotate, neutralize_markers=config.neutralize_markers,
                   working_memory=config.working_memory, replay_cap=config.replay_cap)


def _runtime_context(c: RuntimeContextConfig) -> RuntimeContext:
    return RuntimeContext(c.input_key, channel=c.channel, timezone_name=c.timezone, time_format=c.time_format,
                          max_image_bytes=c.max_image_bytes)


@hookimpl
def register_providers(register: Any) -> None:
    """Offer every provider of this distribution."""
    register("static_prompt", _static_prompt, config=StaticPromptConfig,
             description="A fixed trusted system message (text, or a named default prompt).")
    register("tools_desc", _tools_desc, config=ToolsDescConfig,
             description="Tool descriptions as a system message (preformatted or rendered from JSON schemas).")
    register("bootstrap_files", _bootstrap, config=BootstrapFilesConfig,
             description="Workspace files (AGENTS.md, SOUL.md, USER.md), layered and confined to the workspace.")
    register("identity", _identity, config=IdentityConfig,
             description="Workspace, OS, Python, channel and a formatting hint; no clock, so it stays cacheable.")
    register("skills", Skills, config=SkillsConfig,
             description="Skill catalog (*/SKILL.md): always-on skills in full, an index or full instructions.")
    register("history", _history, config=HistoryConfig,
             description="The conversation from state['messages'], annotated (tool plans, observations).")
    register("runtime_context", _runtime_context, config=RuntimeContextConfig,
             description="The current user message with a runtime-metadata block appended.")
    register("memory_file", MemoryFile, config=MemoryFileConfig,
             description="MEMORY.md as long-term memory, when it differs from the template.")
    register("memory_recall", MemoryRecall, config=MemoryRecallConfig,
             description="Items recalled from the pipeline's memory store for the current message (untrusted).")
    register("recent_memory", RecentMemory, config=RecentMemoryConfig,
             description="History-log entries newer than the cursor (at most 50 entries, 8000 tokens).")
    register("archived_summary", ArchivedSummary, config=ArchivedSummaryConfig,
             description="[Archived Context Summary] from the state.")
    register("sections", create_sections, config=SectionsConfig,
             description="Several providers joined into one system prompt by a separator.")


@hookimpl
def register_presets(register: Any) -> None:
    """Offer the shipped preset pipelines."""
    for name, description in PRESETS.items():
        register(name, PRESETS_DIR / f"{name}.yaml", description=description)
