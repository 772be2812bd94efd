"""``bootstrap_files``: workspace files (AGENTS.md, SOUL.md, USER.md) as context.

Each configured name is looked up in up to three layers, as coding agents do
with their rule files: the user-level directory (``user_dir``), the project
root (``workspace``) and the current subdirectory (``subdir``, inside the
workspace). Found layers are concatenated in that order and rendered
``## {filename}\\n\\n{content}``; missing files are skipped.

Every read follows the confinement rules of :mod:`ctxcore_providers._files`.
``@import path`` lines (alone on a line) are replaced by the imported file,
resolved from the importing file's directory and confined to the allowed roots
(the user directory and the workspace); cycles and missing imports are skipped
with a warning. A refused file is skipped and logged (``on_refused: warn``) or
fails the build (``on_refused: raise``).

The rendering is cached until a file involved changes (mtime/size, including
files that appear) or ``ttl_seconds`` pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import structlog
from pydantic import BaseModel, ConfigDict, Field

from ctxcore import Message
from ctxcore_providers._files import (
    DEFAULT_MAX_BYTES,
    FileRefused,
    RenderCache,
    confined_file,
    read_text,
)
from ctxcore_providers._render import Trust, context_message

log = structlog.get_logger("ctxcore_providers.bootstrap")

DEFAULT_FILES = ("AGENTS.md", "SOUL.md", "USER.md")
_IMPORT = re.compile(r"^[ \t]*@import[ \t]+(\S+)[ \t\r]*$", re.MULTILINE)  # \r: CRLF files
MAX_IMPORT_DEPTH = 5
#: at most this many imports are inlined into one top-level file (their bytes also count against max_bytes).
MAX_IMPORTS = 100


class BootstrapFilesConfig(BaseModel):
    """Options of the ``bootstrap_files`` provider."""

    model_config = ConfigDict(extra="forbid")

    workspace: str = Field(default=".", description="Project root; every file must resolve inside it.")
    files: list[str] = Field(default_factory=lambda: list(DEFAULT_FILES), description="File names, relative to each layer.")
    user_dir: str | None = Field(default=None, description="User-level directory searched first (e.g. ~/.config/agent).")
    subdir: str | None = Field(default=None, description="Current subdirectory (relative to workspace) searched last.")
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, gt=0, description="Files larger than this are refused unread.")
    imports: bool = Field(default=True, description="Inline '@import path' lines.")
    trust: Trust = Field(default="untrusted", description="untrusted: a user-role data block; trusted: a system message.")
    on_refused: Literal["warn", "raise"] = Field(default="warn", description="A refused file is skipped with a warning, or fails the build.")
    ttl_seconds: float | None = Field(default=None, gt=0, description="Re-read at least this often even when unchanged.")
    priority: int = 80


class BootstrapFiles:
    """Renders the workspace's bootstrap files into one context message."""

    def __init__(self, workspace: str | Path = ".", files: Sequence[str] = DEFAULT_FILES, *, user_dir: str | Path | None = None,
                 subdir: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES, imports: bool = True,
                 trust: Trust = "untrusted", on_refused: Literal["warn", "raise"] = "warn",
                 ttl_seconds: float | None = None, priority: int = 80) -> None:
        self.root = Path(workspace).expanduser().resolve()
        self.user_root = Path(user_dir).expanduser().resolve() if user_dir else None
        self.files = list(files)
        self.subdir = subdir
        self.max_bytes = max_bytes
        self.imports = imports
        self.trust = trust
        self.on_refused = on_refused
        self.priority = priority
        self.cache: RenderCache[tuple[Message, ...]] = RenderCache(ttl=ttl_seconds)
        #: problems met by the last rendering (refused files, cycles, missing imports).
        self.warnings: list[str] = []
        #: import allowance left for the top-level file being expanded: [bytes, count].
        self._budget = [max_bytes, MAX_IMPORTS]

    # ---------------------------------------------------------------- layers
    def _layers(self) -> list[Path]:
        layers = [r for r in (self.user_root, self.root) if r is not None]
        if self.subdir:
            sub = confined_dir(self.root, self.subdir)
            if sub is not None:
                layers.append(sub)
        return list(dict.fromkeys(layers))  # one directory used as two layers is read once

    def _allowed(self) -> list[Path]:
        return [r for r in (self.user_root, self.root) if r is not None]

    def _refused(self, message: str) -> None:
        if self.on_refused == "raise":
            raise FileRefused(message)
        self.warnings.append(message)
        log.warning("bootstrap_file_refused", reason=message)

    # ---------------------------------------------------------------- render
    def _render(self) -> tuple[tuple[Message, ...], list[Path]]:
        self.warnings = []
        for key, root in (("user_dir", self.user_root), ("workspace", self.root)):
            if root is not None and not root.is_dir():
                # Missing files are normal; a missing root is almost always a typo in the pipeline.
                self.warnings.append(f"bootstrap_files {key} {str(root)!r} is not a directory: no files are read from it")
                log.warning("bootstrap_root_missing", option=key, path=str(root))
        deps: list[Path] = []
        sections = []
        layers = self._layers()
        for name in self.files:
            parts = []
            seen: set[Path] = set()  # a layer's file symlinked to another layer's is read once
            if self.subdir:
                deps.append(self.root / self.subdir / name)  # a subdirectory created later is noticed
            for layer in layers:
                deps.append(layer / name)
                self._budget = [self.max_bytes, MAX_IMPORTS]
                try:
                    path = confined_file(layer, name, max_bytes=self.max_bytes, allowed_roots=self._allowed())
                    if path is None or path in seen:
                        continue
                    seen.add(path)
                    deps.append(path)
                    parts.append(self._expand(path, read_text(path, roots=self._allowed(), max_bytes=self.max_bytes), [path], deps).strip())
                except FileNotFoundError:  # removed since it was found: as if it were missing
                    continue
                except FileRefused as exc:
                    self._refused(f"bootstrap file {exc}")
            if parts:
                sections.append(f"## {name}\n\n" + "\n\n".join(p for p in parts if p))
        if not sections:
            return (), deps
        text = "\n\n".join(sections)
        return (context_message(text, source_label="workspace files", trust=self.trust, priority=self.priority, kind="bootstrap_files"),), deps

    def _expand(self, path: Path, text: str, stack: list[Path], deps: list[Path]) -> str:
        if not self.imports or "@import" not in text:
            return text

        def replace(match: re.Match[str]) -> str:
            target = match.group(1)
            if len(stack) > MAX_IMPORT_DEPTH:
                self.warnings.append(f"{path.name}: @import {target} skipped: deeper than {MAX_IMPORT_DEPTH} levels")
                return ""
            deps.append(path.parent / target)
            try:
                resolved = confined_file(path.parent, target, max_bytes=self.max_bytes, allowed_roots=self._allowed(), relative_ok=True)
            except FileRefused as exc:
                self._refused(f"{path.name}: @import {exc}")
                return ""
            if resolved is None:
                self.warnings.append(f"{path.name}: @import {target} skipped: file not found")
                log.warning("bootstrap_import_missing", file=str(path), target=target)
                return ""
            if resolved in stack:
                self.warnings.append(f"{path.name}: @import {target} skipped: import cycle")
                log.warning("bootstrap_import_cycle", file=str(path), target=target)
                return ""
            deps.append(resolved)
            try:
                size = resolved.stat().st_size
            except OSError:  # removed since it was checked: as if it were missing
                self.warnings.append(f"{path.name}: @import {target} skipped: file not found")
                return ""
            if self._budget[1] <= 0 or size > self._budget[0]:
                self._refused(f"{path.name}: @import {target} skipped: imports of one file are over the limit of "
                              f"{MAX_IMPORTS} files and {self.max_bytes} bytes (max_bytes)")
                return ""
            self._budget[0] -= size
            self._budget[1] -= 1
            try:
                return self._expand(resolved, read_text(resolved, roots=self._allowed(), max_bytes=self.max_bytes), [*stack, resolved], deps).strip()
            except FileNotFoundError:
                self.warnings.append(f"{path.name}: @import {target} skipped: file not found")
                return ""
            except FileRefused as exc:
                self._refused(f"{path.name}: @import {exc}")
                return ""

        return _IMPORT.sub(replace, text)

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> Sequence[Message]:
        """The rendered files (cached until one changes), or nothing when none exists."""
        return self.cache.get(self._render)


def confined_dir(root: Path, name: str) -> Path | None:
    """``root/name`` resolved, when it is a directory inside ``root`` (else ``None``)."""
    from ctxcore_providers._files import check_relative, inside

    check_relative(name)
    try:
        resolved = (root / name).resolve(strict=True)
    except (OSError, RuntimeError, ValueError):
        return None
    return resolved if resolved.is_dir() and inside(resolved, root) else None
