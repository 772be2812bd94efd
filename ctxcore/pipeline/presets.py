"""Preset pipelines (chat, react, skill, agent) and the builder resolution for LLM calls.

A preset is a YAML pipeline file a plugin ships (``register_presets`` hook; the
``ctxcore-providers`` distribution ships the four named here). The Python
factories load that same file and only patch the steps a parameter names, so
``for_react(...)`` and ``ctx build --preset react`` produce identical messages for
the same state, and the provider chain is written down in one place.

Steps are addressed by their ``id`` in the preset file:

========  =======================================================================
preset    providers
========  =======================================================================
chat      persona -> bootstrap (optional) -> history
react     persona -> react_protocol -> tools (optional) -> bootstrap (optional) -> history
skill     persona -> react_protocol (optional) -> bootstrap (optional) -> skills -> history
agent     system (identity, bootstrap, tool contract, memory, skills, recent memory,
          archived summary; joined by ``---``) -> history -> current (runtime block)
========  =======================================================================
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxcore.engine.builder import ContextBuilder, register_preset_factories
from ctxcore.errors import ConfigError, ConfigIssue, PluginError
from ctxcore.model.safe_yaml import load_yaml
from ctxcore.pipeline.spec import Pipeline
from ctxcore.plugins.host import PluginHost, default_host

__all__ = [
    "PromptRuntimeContext",
    "PresetInfo",
    "available_presets",
    "preset_text",
    "preset_pipeline",
    "for_chat",
    "for_react",
    "for_skill",
    "resolve_for_llm",
    "resolve_skills_dir",
    "DEFAULT_SKILLS_DIR",
]

#: the skills directory used when neither the runtime nor the configuration names one.
DEFAULT_SKILLS_DIR = "./skills"


@dataclass(frozen=True)
class PromptRuntimeContext:
    """Per-run prompt settings (what an agent runtime knows about this call).

    ``for_chat`` and ``for_react`` read only ``workspace_dir`` and
    ``include_bootstrap_files``; the skill fields matter to ``for_skill`` and to
    :func:`resolve_for_llm`.

    Attributes:
        context_builder: a ready builder; :func:`resolve_for_llm` returns it as is.
        skills_dir: the skills directory for this run.
        workspace_dir: the workspace (bootstrap files, skill shadowing); default ``.``.
        skills_catalog: a catalog object (``ctxcore_providers.SkillsCatalog``) or
            a directory path; wins over ``skills_dir``.
        include_skills_summary: render the skills index.
        include_active_skills: render always-on skills in full.
        include_bootstrap_files: add the workspace bootstrap files.
    """

    context_builder: Any = None
    skills_dir: str | None = None
    workspace_dir: str | None = None
    skills_catalog: Any = None
    include_skills_summary: bool = False
    include_active_skills: bool = False
    include_bootstrap_files: bool = False

    def requests_skill_context(self) -> bool:
        """True when this run asks for skills (a catalog, a directory or a skills toggle)."""
        return bool(self.skills_catalog is not None or self.skills_dir or self.include_skills_summary or self.include_active_skills)


@dataclass(frozen=True)
class PresetInfo:
    """A preset pipeline offered by a plugin."""

    name: str
    path: Path
    plugin: str
    description: str = ""


def available_presets(host: PluginHost | None = None) -> dict[str, PresetInfo]:
    """Every preset the loaded plugins offer, by name (the first plugin wins a name).

    Raises:
        PluginError: a plugin's ``register_presets`` raised; names the plugin.
    """
    host = host or default_host()
    found: dict[str, PresetInfo] = {}
    caller = host.hook.register_presets
    for impl in caller.get_hookimpls():
        def register(name: str, path: str | Path, *, description: str = "", _plugin: str = impl.plugin_name) -> None:
            found.setdefault(name, PresetInfo(name, Path(path), _plugin, description))

        try:
            impl.function(**{arg: register for arg in impl.argnames})
        except Exception as exc:
            raise PluginError(f"plugin '{impl.plugin_name}' failed in register_presets: {type(exc).__name__}: {exc}") from exc
    return dict(sorted(found.items()))


def _preset(name: str, host: PluginHost | None) -> PresetInfo:
    presets = available_presets(host)
    if name not in presets:
        import difflib

        close = difflib.get_close_matches(name, list(presets), n=1)
        hint = f" — did you mean {close[0]!r}?" if close else ""
        known = ", ".join(presets) or "none (install ctxcore-providers)"
        raise ConfigError([ConfigIssue(f"unknown preset {name!r}{hint} (available: {known})")])
    return presets[name]


def preset_text(name: str, host: PluginHost | None = None) -> str:
    """The YAML text of preset ``name`` (what ``ctx pipeline show --preset`` prints)."""
    return _preset(name, host).path.read_text(encoding="utf-8")


def preset_pipeline(name: str, *, host: PluginHost | None = None, env: Mapping[str, str] | None = None) -> Pipeline:
    """The preset as a :class:`Pipeline`, exactly as its YAML file reads (``env`` for ``${VAR}``)."""
    info = _preset(name, host)
    return Pipeline.from_yaml(info.path, host=host or default_host(), env=os.environ if env is None else env)


# ------------------------------------------------------------------ patching
class _Preset:
    """The data of a preset file, patched step by step before compiling."""

    def __init__(self, name: str, host: PluginHost | None) -> None:
        self.host = host or default_host()
        info = _preset(name, self.host)
        # No environment: a Python call must not change behaviour with the shell it runs in.
        loaded = load_yaml(info.path.read_text(encoding="utf-8"), file=str(info.path), env={})
        if loaded.issues or not isinstance(loaded.data, dict):
            raise ConfigError(loaded.issues or [ConfigIssue("preset is not a mapping", file=str(info.path))])
        self.data: dict[str, Any] = copy.deepcopy(loaded.data)
        self.name = name

    def step(self, step_id: str) -> dict[str, Any]:
        for slot in ("providers", "filters"):
            for step in self.data.get(slot) or []:
                if isinstance(step, dict) and step.get("id") == step_id:
                    return step
        raise KeyError(f"preset {self.name!r} has no step with id {step_id!r}")

    def set(self, step_id: str, **options: Any) -> None:
        self.step(step_id).update(options)

    def builder(self) -> ContextBuilder:
        return Pipeline.from_dict(self.data, host=self.host, source=f"preset:{self.name}").builder()


def _persona(p: _Preset, system_prompt: str | None) -> None:
    if system_prompt is None:
        return
    step = p.step("persona")
    if system_prompt == "":
        step["enabled"] = False
        return
    step.pop("prompt", None)
    step["text"] = system_prompt


def _bootstrap(p: _Preset, runtime: PromptRuntimeContext | None, files: Sequence[str] | None) -> None:
    runtime = runtime or PromptRuntimeContext()
    step = p.step("bootstrap")
    step["enabled"] = bool(runtime.include_bootstrap_files)
    if runtime.workspace_dir:
        step["workspace"] = str(runtime.workspace_dir)
    if files is not None:
        step["files"] = list(files)


def _history(p: _Preset, working_memory: Any) -> None:
    if working_memory is not None:
        p.set("history", working_memory=working_memory)


def _limits(p: _Preset, max_messages: int | None, max_tokens: int | None) -> None:
    if max_messages is not None:
        p.set("max_messages", enabled=True, max_messages=max_messages)
    if max_tokens is not None:
        p.set("token_budget", max_tokens=max_tokens)


# ------------------------------------------------------------------ presets
def for_chat(
    system_prompt: str | None = None,
    working_memory: Any | None = None,
    max_messages: int | None = None,
    max_tokens: int | None = None,
    *,
    runtime_prompt: PromptRuntimeContext | None = None,
    bootstrap_files: Sequence[str] | None = None,
    host: PluginHost | None = None,
) -> ContextBuilder:
    """Persona -> bootstrap files (when the runtime asks) -> history; no tools, no skills.

    Args:
        system_prompt: the persona; ``None`` uses the ``persona`` prompt text, ``""`` leaves it out.
        working_memory: an object with ``build_view(messages)`` applied to the history.
        max_messages: keep at most this many non-system messages (by whole units).
        max_tokens: input-token limit (default: the preset's model budget).
        runtime_prompt: per-run settings; only the bootstrap fields are read.
        bootstrap_files: file names to load instead of AGENTS.md, SOUL.md, USER.md.
        host: the plugin host (default: the process-wide one).
    """
    p = _Preset("chat", host)
    _persona(p, system_prompt)
    _bootstrap(p, runtime_prompt, bootstrap_files)
    _history(p, working_memory)
    _limits(p, max_messages, max_tokens)
    return p.builder()


def for_react(
    system_prompt: str | None = None,
    tools_desc: str | Sequence[Mapping[str, Any]] | None = None,
    working_memory: Any | None = None,
    max_messages: int | None = None,
    max_tokens: int | None = None,
    *,
    runtime_prompt: PromptRuntimeContext | None = None,
    bootstrap_files: Sequence[str] | None = None,
    host: PluginHost | None = None,
) -> ContextBuilder:
    """Persona -> ReAct protocol ("Final Answer:") -> tools -> bootstrap (optional) -> history.

    ``tools_desc`` is a preformatted block or a list of JSON-schema tool
    definitions; without it the ``tools`` step reads ``state["tools"]``. Other
    arguments as in :func:`for_chat`; skill fields of ``runtime_prompt`` are ignored.
    """
    p = _Preset("react", host)
    _persona(p, system_prompt)
    if isinstance(tools_desc, str) and tools_desc:
        p.set("tools", text=tools_desc)
    elif tools_desc:
        p.set("tools", tools=[dict(t) for t in tools_desc])
    _bootstrap(p, runtime_prompt, bootstrap_files)
    _history(p, working_memory)
    _limits(p, max_messages, max_tokens)
    return p.builder()


def resolve_skills_dir(runtime_prompt: PromptRuntimeContext | None, configured: str | None = None) -> Any:
    """The skills source: runtime catalog > runtime skills_dir > ``configured`` > ``./skills``."""
    if runtime_prompt is not None and runtime_prompt.skills_catalog is not None:
        return runtime_prompt.skills_catalog
    if runtime_prompt is not None and runtime_prompt.skills_dir:
        return runtime_prompt.skills_dir
    return configured or DEFAULT_SKILLS_DIR


def _skill_names(skill_set: Any) -> list[str]:
    items: Iterable[Any] = getattr(skill_set, "skills", skill_set)
    if isinstance(items, (str, bytes)):
        items = [items]
    return [item if isinstance(item, str) else str(item.name) for item in items]


def for_skill(
    *,
    system_prompt: str | None = None,
    skill_set: Any | None = None,
    tools: Sequence[Any] | None = None,
    mode: str = "summary",
    include_resources: bool = True,
    include_react_protocol: bool = False,
    max_messages: int | None = None,
    max_tokens: int | None = None,
    runtime_prompt: PromptRuntimeContext | None = None,
    bootstrap_files: Sequence[str] | None = None,
    include_unavailable_skills: bool = False,
    skills_dir: str | None = None,
    working_memory: Any | None = None,
    host: PluginHost | None = None,
) -> ContextBuilder:
    """Persona -> ReAct protocol (optional) -> bootstrap (optional) -> skills -> history.

    Args:
        skill_set: skill names (or objects with ``.name``, or an object with a
            ``skills`` list) to offer; default: every skill in the catalog.
        tools: the tools visible to the model (names or JSON-schema dicts); a
            file-read tool among them switches the summary to on-demand loading.
        mode: ``summary`` (an index) or ``full`` (every skill's instructions).
        include_resources: list each skill's resource files.
        include_react_protocol: add the ReAct protocol after the persona.
        runtime_prompt: catalog/directory and the summary/active toggles for this run.
        include_unavailable_skills: offer skills whose requirements are unmet (marked).
        skills_dir: the configured skills directory (below the runtime's in precedence).
    """
    p = _Preset("skill", host)
    _persona(p, system_prompt)
    p.set("react_protocol", enabled=include_react_protocol)
    _bootstrap(p, runtime_prompt, bootstrap_files)
    source = resolve_skills_dir(runtime_prompt, skills_dir)
    options: dict[str, Any] = {"mode": mode, "include_resources": include_resources,
                               "include_unavailable": include_unavailable_skills}
    if isinstance(source, (str, os.PathLike)):
        options["skills_dir"] = str(source)
    else:
        options["catalog"] = source
    if runtime_prompt is not None and runtime_prompt.workspace_dir:
        options["workspace"] = str(runtime_prompt.workspace_dir)
    if skill_set is not None:
        options["select"] = _skill_names(skill_set)
    elif runtime_prompt is not None and runtime_prompt.requests_skill_context():
        options["include_summary"] = runtime_prompt.include_skills_summary
        options["include_active"] = runtime_prompt.include_active_skills
    if tools is not None:
        options["tools"] = [t if isinstance(t, str) else _tool_name(t) for t in tools]
    p.set("skills", **options)
    _history(p, working_memory)
    _limits(p, max_messages, max_tokens)
    return p.builder()


def _tool_name(tool: Any) -> str:
    if isinstance(tool, Mapping):
        inner = tool.get("function")
        fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else tool
        return str(fn.get("name", ""))
    return str(getattr(tool, "name", tool))


def resolve_for_llm(
    *,
    explicit_builder: Any = None,
    runtime_prompt: PromptRuntimeContext | None = None,
    system_prompt: str | None = None,
    tools_desc: str | Sequence[Mapping[str, Any]] | None = None,
    prefer_react: bool = False,
    allow_skill_context: bool = False,
    skill_set: Any | None = None,
    skill_tools: Sequence[Any] | None = None,
    skill_mode: str = "summary",
    include_skill_resources: bool = True,
    include_react_protocol: bool = False,
    include_unavailable_skills: bool = False,
    host: PluginHost | None = None,
) -> Any:
    """The builder for one LLM call, first match wins.

    1. ``explicit_builder``;
    2. ``runtime_prompt.context_builder``;
    3. :func:`for_skill` when ``allow_skill_context`` and a ``skill_set`` or a
       runtime skill request (catalog, skills_dir or a skills toggle) is present;
    4. :func:`for_react` when ``prefer_react`` or ``tools_desc``;
    5. :func:`for_chat`.
    """
    if explicit_builder is not None:
        return explicit_builder
    if runtime_prompt is not None and runtime_prompt.context_builder is not None:
        return runtime_prompt.context_builder
    if allow_skill_context and (skill_set is not None or (runtime_prompt is not None and runtime_prompt.requests_skill_context())):
        return for_skill(
            system_prompt=system_prompt, skill_set=skill_set, tools=skill_tools, mode=skill_mode,
            include_resources=include_skill_resources, include_react_protocol=include_react_protocol,
            runtime_prompt=runtime_prompt, include_unavailable_skills=include_unavailable_skills, host=host,
        )
    if prefer_react or tools_desc:
        return for_react(system_prompt=system_prompt, tools_desc=tools_desc, runtime_prompt=runtime_prompt, host=host)
    return for_chat(system_prompt=system_prompt, runtime_prompt=runtime_prompt, host=host)


register_preset_factories(for_chat=for_chat, for_react=for_react, for_skill=for_skill, resolve_for_llm=resolve_for_llm)
