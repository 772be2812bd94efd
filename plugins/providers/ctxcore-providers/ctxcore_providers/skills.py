"""``skills``: the skill catalog as system messages.

Output, in order, each part only when it has content:

1. ``# Active Skills`` — always-on skills (``always: true``) in full;
2. the skills block — ``summary`` mode: the capability policy, then the
   on-demand loading policy when a file-read tool is available (else the
   fallback policy plus every indexed skill's instructions under
   "Skill instructions:"), then the index (name, description, path; skills
   with unmet requirements marked unavailable with what is missing); ``full``
   mode: the index plus every skill's instructions. Always-on skills are never
   in the index (part 1 renders them).

Skill files are instructions the operator installed, so they are sent as
trusted system messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ctxcore import Message, system
from ctxcore.kit import get_prompt
from ctxcore_providers._markers import neutralize_markers
from ctxcore_providers._render import stable_id
from ctxcore_providers.skills_catalog import Skill, SkillsCatalog

#: tool names that count as a file-read tool.
DEFAULT_FILE_READ_TOOLS = ("read_file", "read", "file_read", "view", "cat", "open_file")


class SkillsConfig(BaseModel):
    """Options of the ``skills`` provider."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    skills_dir: str = Field(default="./skills", description="Workspace skills directory (relative to workspace).")
    workspace: str = Field(default=".", description="Base of a relative skills_dir.")
    builtin_dirs: list[str] = Field(default_factory=list, description="Built-in skill directories, shadowed by workspace skills.")
    # A YAML file can only leave it null: the JSON Schema says so (`ctx pipeline schema`).
    catalog: Any = Field(default=None, description="A SkillsCatalog object (Python only); wins over the directories.",
                         json_schema_extra={"type": "null"})
    disabled: list[str] = Field(default_factory=list, description="Skill names to leave out.")
    select: list[str] | None = Field(default=None, description="Only these skills (the run's skill set).")
    mode: Literal["summary", "full"] = "summary"
    include_summary: bool = Field(default=True, description="Render the skills block (index or full).")
    include_active: bool = Field(default=True, description="Render always-on skills in full under '# Active Skills'.")
    include_resources: bool = Field(default=True, description="List each skill's resource files.")
    include_unavailable: bool = Field(default=False, description="Also give unavailable skills' instructions in full.")
    tools: list[str] | None = Field(default=None, description="Visible tool names; default: names in state['tools'].")
    file_read_tools: list[str] = Field(default_factory=lambda: list(DEFAULT_FILE_READ_TOOLS))
    path_map: dict[str, str] = Field(default_factory=dict, description="Prefix rewrites for shown paths (host path -> runtime path).")
    ttl_seconds: float | None = Field(default=None, gt=0)
    priority: int = 70

    @field_validator("catalog")
    @classmethod
    def _catalog(cls, value: Any) -> Any:
        if value is not None and not callable(getattr(value, "skills", None)):
            raise ValueError("catalog must be an object with skills() (a SkillsCatalog; Python only)")
        return value


class Skills:
    """Renders active skills and the skill index from a catalog."""

    def __init__(self, config: SkillsConfig) -> None:
        self.config = config
        if config.catalog is not None:
            self.catalog = config.catalog
        else:
            base = Path(config.workspace).expanduser()
            dirs: list[tuple[str, str | Path]] = [("builtin", d) for d in config.builtin_dirs]
            dirs.append(("workspace", base / config.skills_dir))
            self.catalog = SkillsCatalog(dirs, disabled=config.disabled, ttl_seconds=config.ttl_seconds)
        self.policies = {k: get_prompt(k) for k in (
            "skill_capability_policy", "skill_on_demand_policy", "skill_fallback_policy", "skill_resource_usage_policy")}
        self._last: tuple[Any, tuple[Message, ...]] | None = None

    # ------------------------------------------------------------ rendering
    def _path(self, path: Path) -> str:
        shown = str(path)
        for prefix, replacement in sorted(self.config.path_map.items(), key=lambda kv: -len(kv[0])):
            if shown == prefix or shown.startswith(prefix.rstrip("/") + "/"):
                return replacement.rstrip("/") + shown[len(prefix.rstrip("/")):]
        return shown

    def _full(self, skill: Skill) -> str:
        text = f"### {skill.name}\n\n{skill.body}"
        if self.config.include_resources and skill.resources:
            root = self._path(skill.path.parent)
            text += f"\n\nResources (under {root}):\n" + "\n".join(f"- {r}" for r in skill.resources)
        return text

    def _index_line(self, skill: Skill) -> str:
        line = f"- **{skill.name}**: {skill.description} ({self._path(skill.path)})"
        if not skill.available:
            line += f" — unavailable: {skill.missing()}"
        return line

    def render(self, skills: Sequence[Skill], tool_names: Sequence[str]) -> tuple[Message, ...]:
        """The messages for ``skills`` given the visible tools."""
        cfg = self.config
        usable = [s for s in skills if s.available or cfg.include_unavailable]
        out = []
        active = [s for s in usable if s.always] if cfg.include_active else []
        if active:
            out.append("# Active Skills\n\n" + "\n\n".join(self._full(s) for s in active))
        indexed = [s for s in skills if not s.always]  # always-on skills are rendered in full, never indexed
        if cfg.include_summary and indexed:
            has_reader = any(t in cfg.file_read_tools for t in tool_names)
            parts = ["# Skills", self.policies["skill_capability_policy"]]
            inline = cfg.mode == "full" or not has_reader
            if cfg.mode == "summary":
                parts.append(self.policies["skill_on_demand_policy"] if has_reader else self.policies["skill_fallback_policy"])
            if cfg.include_resources:
                parts.append(self.policies["skill_resource_usage_policy"])
            parts.append("\n".join(self._index_line(s) for s in indexed))
            inline_skills = [s for s in indexed if s.available or cfg.include_unavailable]
            if inline and inline_skills:
                parts.append("Skill instructions:\n\n" + "\n\n".join(self._full(s) for s in inline_skills))
            out.append("\n\n".join(p for p in parts if p))
        out = [neutralize_markers(t) for t in out]
        return tuple(system(t, id=stable_id("skills", t), priority=cfg.priority) for t in out)

    def _tool_names(self, state: Mapping[str, Any]) -> list[str]:
        if self.config.tools is not None:
            return list(self.config.tools)
        names = []
        for tool in state.get("tools") or () if isinstance(state.get("tools"), list) else ():
            if isinstance(tool, Mapping):
                inner = tool.get("function")
                fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else tool
                if isinstance(fn.get("name"), str):
                    names.append(fn["name"])
            elif isinstance(tool, str):
                names.append(tool)
        return names

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """Active skills and the skills block (reused while the catalog and tools are unchanged)."""
        skills = list(self.catalog.skills())
        if self.config.select is not None:
            wanted = set(self.config.select)
            skills = [s for s in skills if s.name in wanted]
        tools = self._tool_names(state)
        key = (tuple(skills), tuple(tools))  # Skill is a frozen dataclass: equal when unchanged
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        out = self.render(skills, tools)
        self._last = (key, out)
        return out
