"""The names and summaries of plugin-added commands, cached so ``ctx --help`` imports no plugin.

Listing the commands a plugin adds (``register_commands``) means importing
every plugin. The listing is saved in the user's cache directory
(``$XDG_CACHE_HOME/ctxcore/cli-commands``, else ``~/.cache/ctxcore/...``),
one small JSON file per key. The key is everything that can change the
listing: ctxcore's version; the ``ctxcore`` entry points with their
distributions' metadata (name and version); the plugin variables; and the size and
modification time of the Python files next to each entry point's module,
found without importing it. So installing, removing, blocking or editing a
plugin makes the next ``ctx --help`` load the plugins once and rewrite the
entry. A missing, unreadable or malformed entry is a miss and an unwritable
directory is ignored: the cache only ever saves time.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["CachedCommand", "CachedListing", "cache_dir", "listing_key", "read_listing", "write_listing"]

#: the variables that decide which plugins load (docs/plugins.md)
PLUGIN_VARIABLES = ("CTXCORE_PLUGINS", "CTXCORE_BLOCK_PLUGINS", "CTXCORE_DISABLE_PLUGIN_AUTOLOAD", "CTXCORE_STRICT_PLUGINS")
_FORMAT = 1
_KEEP = 16  # entries kept (one per environment: venvs, variable settings)


@dataclass(frozen=True)
class CachedCommand:
    """A plugin-added command as help shows it."""

    name: str
    summary: str
    hidden: bool = False


@dataclass(frozen=True)
class CachedListing:
    """The plugin-added commands of one key, and the warnings their registration printed."""

    commands: tuple[CachedCommand, ...]
    warnings: tuple[str, ...] = ()


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where listings are kept: ``$XDG_CACHE_HOME/ctxcore/cli-commands`` (default ``~/.cache``)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ctxcore" / "cli-commands"


def listing_key(version: str, env: Mapping[str, str] | None = None) -> str:
    """A digest of everything that decides the plugin-added commands (see the module docstring)."""
    from importlib.metadata import entry_points  # the standard library's: the backport costs more to import

    env = os.environ if env is None else env
    parts: list[Any] = [_FORMAT, version, [env.get(name) for name in PLUGIN_VARIABLES]]
    for ep in sorted(entry_points(group="ctxcore"), key=lambda e: (e.name, e.value)):
        parts.append([ep.name, ep.value, _metadata(ep.dist), _sources(ep.module)])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


def _metadata(dist: Any) -> str:
    """The distribution's metadata file as is (its name and version; reading it unparsed saves the email parser)."""
    if dist is None:
        return ""
    return dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""


def _sources(module: str) -> list[Any]:
    """Size and mtime of the ``.py`` files beside ``module``'s file, found without importing it."""
    try:
        origin = _origin(module)
    except (ImportError, ValueError, AttributeError):
        origin = None
    if origin is None:
        return ["not found"]
    try:
        with os.scandir(os.path.dirname(origin)) as entries:
            files = [(e.name, e.stat()) for e in entries if e.name.endswith(".py") and e.is_file()]
    except OSError:
        return ["unreadable"]
    return sorted([name, st.st_size, st.st_mtime_ns] for name, st in files)


def _origin(module: str) -> str | None:
    """The file of ``module``: the top package through the import finders, the rest by path (no import)."""
    parts = module.split(".")
    spec = importlib.util.find_spec(parts[0])
    for depth in range(2, len(parts) + 1):
        if spec is None or not spec.submodule_search_locations:
            return None
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:depth]), list(spec.submodule_search_locations))
    return spec.origin if spec is not None and spec.has_location else None


def read_listing(key: str, directory: Path | None = None) -> CachedListing | None:
    """The listing saved under ``key``, or None when there is none or it cannot be read as one."""
    path = (directory or cache_dir()) / f"{key}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != _FORMAT:
            return None
        commands = tuple(
            CachedCommand(str(c["name"]), str(c["summary"]), bool(c.get("hidden", False))) for c in data["commands"]
        )
        return CachedListing(commands, tuple(str(w) for w in data.get("warnings", [])))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def write_listing(key: str, listing: CachedListing, directory: Path | None = None) -> None:
    """Save ``listing`` under ``key`` (atomically) and drop the oldest entries; failures are ignored."""
    directory = directory or cache_dir()
    doc = {"format": _FORMAT, "commands": [asdict(c) for c in listing.commands], "warnings": list(listing.warnings)}
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(doc, out)
        os.replace(tmp, directory / f"{key}.json")
        _prune(directory)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def _prune(directory: Path) -> None:
    """Keep the newest entries only (each environment writes its own)."""
    entries = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in entries[_KEEP:]:
        old.unlink(missing_ok=True)
