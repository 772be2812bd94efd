"""The ctxcore exception hierarchy.

Kept in its own small module, at the bottom of the layers (it imports nothing
of ctxcore), so that code which only needs to catch an error never imports the
builder or the pipeline loader. Every exception ctxcore raises on purpose
derives from :class:`CtxError`; where a built-in base is what callers already
catch (``LookupError`` for registry look-ups, ``ValueError`` for bad values),
the error derives from both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CtxError",
    "ConfigError",
    "ConfigIssue",
    "PluginError",
    "ComponentError",
    "BudgetExceeded",
    "InvalidHistory",
    "CheckpointCorrupt",
    "MemoryCorrupt",
    "StaleWrite",
    "UnknownComponent",
    "ComponentConflict",
    "UnstorableState",
    "TranscriptError",
    "ScaffoldError",
    "FileRefused",
]


class CtxError(Exception):
    """Root of every error ctxcore raises on purpose."""


@dataclass(frozen=True)
class ConfigIssue:
    """One located problem in a pipeline file.

    ``line`` and ``column`` are 1-based; both are ``None`` when the problem has no
    position (for example a pipeline built from a dict).
    """

    message: str
    path: str = ""
    file: str | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = self.file or "<pipeline>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        path = f" {self.path}:" if self.path else ""
        return f"{where}{path} {self.message}"


class ConfigError(CtxError):
    """A pipeline file (or dict) is invalid; carries every problem found at once."""

    def __init__(self, issues: Sequence[ConfigIssue] | str) -> None:
        if isinstance(issues, str):
            issues = [ConfigIssue(issues)]
        self.issues: list[ConfigIssue] = list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))


class PluginError(CtxError):
    """A plugin failed to load or two plugins claim the same component name."""


class ComponentError(CtxError):
    """A provider, filter or counter raised while building; names the component.

    Attributes:
        component: the step id of the failing component (``history``, ``filters[1]``...).
        kind: the component kind (``provider``, ``filter``, ``counter``...).
    """

    def __init__(self, component: str, kind: str, cause: BaseException | str) -> None:
        self.component = component
        self.kind = kind
        self.cause = cause
        detail = f"{type(cause).__name__}: {cause}" if isinstance(cause, BaseException) else cause
        super().__init__(
            f"{kind} '{component}' failed: {detail} "
            f"(mark the step 'optional: true' to skip it on failure)"
        )


class BudgetExceeded(CtxError):
    """The protected part of the context alone does not fit the token budget.

    Carries the build report (a :class:`ctxcore.engine.report.BuildReport`, typed
    ``Any`` here so this module imports nothing above it) so the caller can see
    what took the space. ``unit`` is ``"tokens"``, or ``"chars"`` for the model
    budget's character limits (``max_input_chars``, ``max_schema_chars``).
    """

    def __init__(self, message: str, *, budget: int, required: int, report: Any = None, unit: str = "tokens") -> None:
        self.budget = budget
        self.required = required
        self.report = report
        self.unit = unit
        super().__init__(message)


class InvalidHistory(CtxError):
    """The history cannot be sent as it is (for example a tool result without its call)."""

    def __init__(self, message: str, *, index: int | None = None) -> None:
        self.index = index
        super().__init__(message if index is None else f"message {index}: {message}")


class CheckpointCorrupt(CtxError):
    """A stored checkpoint is damaged somewhere other than a torn last record."""


class MemoryCorrupt(CtxError):
    """A long-term memory file cannot be read as what its store wrote; names the file."""


class StaleWrite(CtxError):
    """A checkpoint step is not newer than the latest stored step of its thread."""


class UnknownComponent(CtxError, LookupError):
    """No component of that kind has that name; ``suggestions`` holds close names.

    ``install_hint`` names the first-party distribution that provides it (and
    the install line) when the name is one of ctxcore's own components.
    """

    def __init__(self, kind: str, name: str, suggestions: list[str], install_hint: str | None = None) -> None:
        self.kind, self.name, self.suggestions, self.install_hint = kind, name, suggestions, install_hint
        hint = f" — did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        if install_hint:  # the exact name of a first-party component: installing beats a near miss
            hint = f" — {install_hint}"
        super().__init__(f"unknown {kind} {name!r}{hint}")


class ComponentConflict(PluginError, LookupError):
    """Two plugins registered the same (kind, name); the qualified form picks one."""

    def __init__(self, kind: str, name: str, plugins: list[str]) -> None:
        self.kind, self.name, self.plugins = kind, name, plugins
        choices = " or ".join(f"'{p}:{name}'" for p in plugins)
        super().__init__(f"{kind} {name!r} is registered by {', '.join(plugins)}; write {choices} to choose")


class UnstorableState(CtxError, ValueError):
    """A value passed to ``save_checkpoint`` cannot be stored as exact JSON; nothing was written."""


class TranscriptError(CtxError):
    """A recorded session cannot be replayed; names the source, the message index and the fix."""


class ScaffoldError(CtxError, ValueError):
    """The plugin cannot be scaffolded (bad name, existing directory); the message says how to fix it."""


class FileRefused(CtxError, ValueError):
    """A file ctxcore will not read: outside its root, not a regular file, too large or binary.

    The message names the file and the rule that failed.
    """
