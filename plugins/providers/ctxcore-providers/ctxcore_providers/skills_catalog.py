"""Skill catalogs: ``*/SKILL.md`` files with YAML front matter.

A skill is a directory holding ``SKILL.md``::

    ---
    name: pdf
    description: Read and fill PDF forms.
    always: false
    requires: {bins: [pdftotext], env: [PDF_TOKEN]}
    ---
    Instructions ...

Directories are searched in order (built-in first, then the workspace); a later
skill with the same name shadows an earlier one, so workspace skills override
built-in ones. Skills named in ``disabled`` are left out. The catalog is
re-read only when a ``SKILL.md`` (or a skills directory listing) changes.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ctxcore_providers._files import (
    DEFAULT_MAX_BYTES,
    FileRefused,
    RenderCache,
    read_text,
)

__all__ = ["Skill", "SkillsCatalog", "parse_skill"]

MAX_RESOURCES = 20


@dataclass(frozen=True)
class Skill:
    """One parsed skill."""

    name: str
    description: str
    path: Path
    body: str
    always: bool = False
    bins: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    origin: str = ""
    resources: tuple[str, ...] = ()
    missing_bins: tuple[str, ...] = field(default=())
    missing_env: tuple[str, ...] = field(default=())

    @property
    def available(self) -> bool:
        """True when every required binary is on PATH and every env variable is set."""
        return not self.missing_bins and not self.missing_env

    def missing(self) -> str:
        """``missing bins: a, b; missing env: X`` (empty when available)."""
        parts = []
        if self.missing_bins:
            parts.append("missing bins: " + ", ".join(self.missing_bins))
        if self.missing_env:
            parts.append("missing env: " + ", ".join(self.missing_env))
        return "; ".join(parts)


def _split_front_matter(text: str, where: str) -> tuple[dict[str, Any], str]:
    text = text.removeprefix("\ufeff")  # editors on Windows write a byte order mark
    if not text.startswith("---"):
        raise ValueError(f"{where}: SKILL.md must start with a '---' YAML front matter block")
    end = text.find("\n---", 3)
    if end < 0:
        raise ValueError(f"{where}: front matter is not closed with a '---' line")
    try:
        meta = yaml.safe_load(text[3:end]) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{where}: invalid YAML front matter: {exc}") from None
    except RecursionError:
        raise ValueError(f"{where}: front matter is nested too deeply") from None
    except (ValueError, OverflowError) as exc:  # e.g. a date like 2026-13-45
        raise ValueError(f"{where}: invalid value in front matter: {exc}") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{where}: front matter must be a mapping")
    body = text[end + 4:].lstrip("-").lstrip("\n")
    return meta, body.strip()


def _names(value: Any, where: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else value
    # names are shown in the index ("missing bins: ..."): one printable line each
    if isinstance(names, list) and all(isinstance(v, str) and v.strip() and v.isprintable() for v in names):
        return tuple(names)
    raise ValueError(f"{where}: requires.{key} must be a list of names (one printable line each)")


def parse_skill(path: Path, *, origin: str = "", env: Mapping[str, str] | None = None,
                which: Callable[[str], str | None] = shutil.which, max_bytes: int = DEFAULT_MAX_BYTES,
                root: Path | None = None) -> Skill:
    """Parse one ``SKILL.md``; requirements are checked against ``env`` and ``which``.

    The file is read only while it lies below ``root`` (default: the skill's own
    directory's parent, resolved): a skill directory or SKILL.md that is a
    symlink to a file outside is refused, since skills become system messages.

    Raises:
        ValueError: the file has no valid front matter, or lacks name/description.
    """
    where = str(path)
    confine = root if root is not None else path.parent.parent.resolve()
    meta, body = _split_front_matter(read_text(path, roots=[confine], max_bytes=max_bytes), where)
    name = meta.get("name") or path.parent.name
    description = meta.get("description")
    if not isinstance(name, str) or not isinstance(description, str) or not description.strip():
        raise ValueError(f"{where}: front matter needs 'name' and 'description' strings")
    if not name.strip() or not name.isprintable():
        raise ValueError(f"{where}: 'name' must be one line of printable text, not {name!r}")
    always = meta.get("always", False)
    if not isinstance(always, bool):
        raise ValueError(f"{where}: 'always' must be true or false (unquoted), not {always!r}")
    requires = meta.get("requires") or {}
    if not isinstance(requires, dict):
        raise ValueError(f"{where}: 'requires' must be a mapping like {{bins: [...], env: [...]}}")
    bins = _names(requires.get("bins"), where, "bins")
    envs = _names(requires.get("env"), where, "env")
    env = os.environ if env is None else env
    resources = sorted(
        str(p.relative_to(path.parent)) for p in path.parent.rglob("*")
        if p.is_file() and p.name != "SKILL.md" and not any(part.startswith(".") for part in p.relative_to(path.parent).parts)
    )[:MAX_RESOURCES]
    return Skill(
        name=name, description=" ".join(description.split()), path=path, body=body,
        always=always, bins=bins, env=envs, origin=origin,
        resources=tuple(resources),
        missing_bins=tuple(b for b in bins if which(b) is None),
        missing_env=tuple(e for e in envs if not env.get(e)),
    )


class SkillsCatalog:
    """Skills found in ``dirs`` (later directories shadow earlier ones by name).

    Args:
        dirs: ``(origin, directory)`` pairs or bare directories, lowest precedence first.
        disabled: names to leave out.
        env, which: how requirements are checked (injectable for tests).
        ttl_seconds: re-scan at least this often even when nothing changed.
    """

    def __init__(self, dirs: Sequence[tuple[str, str | Path] | str | Path], *, disabled: Sequence[str] = (),
                 env: Mapping[str, str] | None = None, which: Callable[[str], str | None] = shutil.which,
                 ttl_seconds: float | None = None) -> None:
        self.dirs: list[tuple[str, Path]] = []
        for d in dirs:
            origin, path = d if isinstance(d, tuple) else ("", d)
            self.dirs.append((origin, Path(path).expanduser().resolve()))
        self.disabled = set(disabled)
        self.env = env
        self.which = which
        self.cache: RenderCache[list[Skill]] = RenderCache(ttl=ttl_seconds)
        #: SKILL.md files that could not be parsed in the last scan (path: reason).
        self.errors: list[str] = []

    def _scan(self) -> tuple[list[Skill], list[Path]]:
        by_name: dict[str, Skill] = {}
        deps: list[Path] = []
        self.errors = []
        for origin, root in self.dirs:
            deps.append(root)
            if not root.is_dir():
                continue
            for skill_md in sorted(root.glob("*/SKILL.md")):
                deps.extend([skill_md.parent, skill_md])
                if not skill_md.is_file():
                    continue
                try:
                    skill = parse_skill(skill_md, origin=origin, env=self.env, which=self.which, root=root)
                except (ValueError, FileRefused, OSError) as exc:
                    self.errors.append(str(exc))
                    continue
                by_name[skill.name] = skill
        skills = [s for name, s in sorted(by_name.items()) if name not in self.disabled]
        return skills, deps

    def skills(self) -> list[Skill]:
        """The effective skills, sorted by name (parsed again only when a file changes; requirements checked each call)."""
        env = os.environ if self.env is None else self.env
        out = []
        for s in self.cache.get(self._scan):
            if s.bins or s.env:  # re-checked every call: a binary installed or a variable set later counts
                bins = tuple(b for b in s.bins if self.which(b) is None)
                envs = tuple(e for e in s.env if not env.get(e))
                if (bins, envs) != (s.missing_bins, s.missing_env):
                    s = dataclasses.replace(s, missing_bins=bins, missing_env=envs)
            out.append(s)
        return out
