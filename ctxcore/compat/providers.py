"""The reference providers: static prompt, tool descriptions, history, bootstrap files and skills.

Each creates ctxcore's own provider through the registry (``static_prompt``,
``tools_desc``, ``history``, ``bootstrap_files``, ``skills``; distribution
``ctxcore-providers``) and offers the reference signature
``get_messages(local_state, global_state=None, ctx=None)``. A native
``ContextBuilder`` calls ``get_messages(state, runtime)``, which lands on the
same parameters, so these objects also work as native providers.

Where ctxcore deliberately differs: files, skills and history are untrusted
text and never become system messages (bootstrap files arrive as a user-role
data block unless ``trust="trusted"`` is chosen for files the developer
controls); a failing ``working_memory.build_view`` raises instead of being
logged and skipped. Files are read only by the native providers, which confine
them to the workspace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxcore.compat._resolve import create
from ctxcore.model.messages import Message

__all__ = [
    "BootstrapFilesProvider",
    "SkillSetPromptProvider",
    "StateHistoryProvider",
    "StaticPromptProvider",
    "ToolsDescProvider",
]


def _runtime(global_state: Any, ctx: Any) -> Mapping[str, Any]:
    for candidate in (global_state, ctx):
        if isinstance(candidate, Mapping):
            return candidate
    return {}


def _state(local_state: Any, state_key: str = "messages") -> Mapping[str, Any]:
    """The state mapping a native provider reads: a list is the history, an object's attribute is looked up."""
    if local_state is None:
        return {}
    if isinstance(local_state, Mapping):
        return local_state
    if isinstance(local_state, (list, tuple)):
        return {state_key: list(local_state)}
    if hasattr(local_state, state_key):
        return {state_key: list(getattr(local_state, state_key) or [])}
    return {}


class _Provider:
    _native: Any
    _state_key = "messages"

    def get_messages(self, local_state: Any = None, global_state: Any = None, ctx: Any | None = None) -> list[Message]:
        """The messages the native provider gives for this state."""
        return list(self._native.get_messages(_state(local_state, self._state_key), _runtime(global_state, ctx)))


class StaticPromptProvider(_Provider):
    """``[system(prompt)]``, or nothing for an empty prompt; the message is created once (same id every build)."""

    def __init__(self, prompt: str) -> None:
        self.prompt = prompt
        self._native = create("provider", "static_prompt", {"text": prompt}, for_="StaticPromptProvider") if prompt else None

    def get_messages(self, local_state: Any = None, global_state: Any = None, ctx: Any | None = None) -> list[Message]:
        """The static system message (``[]`` when the prompt is empty)."""
        return super().get_messages(local_state, global_state, ctx) if self._native is not None else []


class ToolsDescProvider(_Provider):
    """``[system("Available tools:\\n" + tools_desc)]``, or nothing for an empty description.

    The template is the ``tools_template`` prompt text (overridable in the project config).
    """

    def __init__(self, tools_desc: str) -> None:
        self.tools_desc = tools_desc
        self._native = create("provider", "tools_desc", {"text": tools_desc}, for_="ToolsDescProvider") if tools_desc else None

    def get_messages(self, local_state: Any = None, global_state: Any = None, ctx: Any | None = None) -> list[Message]:
        """The tool-description system message (``[]`` when the description is empty)."""
        return super().get_messages(local_state, global_state, ctx) if self._native is not None else []


class StateHistoryProvider(_Provider):
    """The history from ``local_state`` (a list, a dict's ``state_key`` or an object's attribute), annotated.

    Earlier assistant tool calls are marked ``semantic_kind = "self_tool_plan"``
    and tool results ``"tool_observation"``, with one "History semantics"
    system note before them, as in the reference. ``working_memory`` (an object
    with ``build_view(messages)``), else ``ctx.working_memory``, reshapes the
    history; a failing ``build_view`` raises (the reference logs and skips it).
    """

    def __init__(self, state_key: str = "messages", working_memory: Any | None = None) -> None:
        self.state_key = self._state_key = state_key
        self.working_memory = working_memory
        self._native = create("provider", "history", {"state_key": state_key, "working_memory": working_memory},
                              for_="StateHistoryProvider")

    def get_messages(self, local_state: Any = None, global_state: Any = None, ctx: Any | None = None) -> list[Message]:
        """The annotated history; ``ctx.working_memory`` is used when the provider has none of its own."""
        runtime = _runtime(global_state, ctx)
        wm = getattr(ctx, "working_memory", None) if not isinstance(ctx, Mapping) else None
        if self.working_memory is None and wm is not None and "working_memory" not in runtime:
            runtime = {**runtime, "working_memory": wm}
        return list(self._native.get_messages(_state(local_state, self._state_key), runtime))


class BootstrapFilesProvider(_Provider):
    """Workspace bootstrap files (default ``AGENTS.md``, ``SOUL.md``, ``USER.md``) as ``## name`` sections.

    Args:
        workspace_dir: the workspace root; every file must resolve inside it.
        files: file names relative to the workspace (default: the native provider's list).
        trust: ``"untrusted"`` (default: a user-role data block) or ``"trusted"``
            (a system message; only for files the developer controls).
    """

    def __init__(self, workspace_dir: str = ".", files: Sequence[str] | None = None, *, trust: str = "untrusted") -> None:
        options: dict[str, Any] = {"workspace": str(workspace_dir), "trust": trust}
        if files is not None:
            options["files"] = list(files)
        self.workspace_dir = str(workspace_dir)
        self._native = create("provider", "bootstrap_files", options, for_="BootstrapFilesProvider")


class SkillSetPromptProvider(_Provider):
    """The skill catalog (``*/SKILL.md`` under ``skills_dir``) rendered in ``summary`` or ``full`` mode.

    Args:
        skills_dir: the skills directory (relative to ``workspace_dir``).
        mode: ``"summary"`` (index plus the on-demand or fallback policy) or ``"full"``.
        skill_set: names of the skills to render (the run's skill set); default all.
        workspace_dir: base of a relative ``skills_dir``.
        always_only: render only the always-on skills under ``# Active Skills``.
    """

    def __init__(self, skills_dir: str = "./skills", *, mode: str = "summary", skill_set: Sequence[str] | None = None,
                 workspace_dir: str = ".", always_only: bool = False) -> None:
        options: dict[str, Any] = {"skills_dir": skills_dir, "workspace": workspace_dir, "mode": mode}
        if skill_set is not None:
            options["select"] = list(skill_set)
        if always_only:
            options["include_summary"] = False
        self.mode = mode
        self._native = create("provider", "skills", options, for_="SkillSetPromptProvider")
