"""Create the native component behind a compat class, through the plugin registry.

The core never imports a plugin: a compat class names the component it stands
on (``("counter", "approximate")``) and this module asks the default plugin
host's registry for it. When the distribution that offers it is not installed,
the error says which one to install.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ctxcore.errors import ConfigError, ConfigIssue, PluginError, UnknownComponent
from ctxcore.kit.prompts import PROJECT_CONFIG_ENV, PROJECT_CONFIG_FILE
from ctxcore.model.safe_yaml import load_yaml
from ctxcore.plugins.host import default_host

__all__ = ["DISTRIBUTIONS", "create", "project_path"]

#: the distribution that registers each (kind, name) a compat class uses.
DISTRIBUTIONS: dict[tuple[str, str], str] = {
    ("counter", "approximate"): "ctxcore-counters",
    ("counter", "tiktoken"): "ctxcore-counters",
    ("counter", "huggingface"): "ctxcore-counter-hf",
    ("filter", "max_messages"): "ctxcore-filters",
    ("filter", "token_budget"): "ctxcore-filters",
    ("provider", "static_prompt"): "ctxcore-providers",
    ("provider", "tools_desc"): "ctxcore-providers",
    ("provider", "history"): "ctxcore-providers",
    ("provider", "bootstrap_files"): "ctxcore-providers",
    ("provider", "skills"): "ctxcore-providers",
    ("checkpointer", "memory"): "ctxcore-checkpointers",
    ("checkpointer", "null"): "ctxcore-checkpointers",
    ("checkpointer", "jsonl"): "ctxcore-checkpointers",
    ("memory", "json"): "ctxcore-memory",
    ("memory", "mem0"): "ctxcore-memory-mem0",
}


def create(kind: str, name: str, options: Mapping[str, Any] | None = None, *, for_: str) -> Any:
    """The component ``name`` of ``kind`` built with ``options``, for the compat class ``for_``.

    Raises:
        PluginError: no installed plugin offers the component; names the distribution to install.
        ConfigError: the options are invalid for the component (the message names each field).
    """
    try:
        component = default_host().registry.get(kind, name)
    except UnknownComponent:
        dist = DISTRIBUTIONS.get((kind, name), "the plugin that provides it")
        raise PluginError(
            f"ctxcore.compat.{for_} needs the {kind} {name!r}, which no loaded plugin provides: "
            f"install {dist} (pip install {dist}), or check CTXCORE_PLUGINS / CTXCORE_BLOCK_PLUGINS"
        ) from None
    try:
        config = component.validate(dict(options or {}))
    except ValidationError as exc:
        issues = [ConfigIssue(f"{e['msg']} (option of the {kind} {name!r} it is built on)",
                              path=".".join(str(p) for p in e["loc"]) or "options", file=f"ctxcore.compat.{for_}")
                  for e in exc.errors(include_url=False)]
        raise ConfigError(issues) from None
    return component.create(config)


def project_path(key: str, default: str) -> str:
    """``paths.<key>`` of the project config file (``$CTXCORE_CONFIG`` or ``./ctxcore.yaml``), else ``default``.

    The reference systems take default directories from their configuration;
    this is the same lookup on ctxcore's project config file.

    Raises:
        ConfigError: the file exists but is not valid YAML, or ``paths.<key>`` is not a string.
    """
    file = Path(os.environ.get(PROJECT_CONFIG_ENV) or PROJECT_CONFIG_FILE)
    if not file.is_file():
        return default
    loaded = load_yaml(file.read_text(encoding="utf-8"), file=str(file))
    if loaded.issues:
        raise ConfigError(loaded.issues)
    data = loaded.data if isinstance(loaded.data, Mapping) else {}
    paths = data.get("paths")
    if paths is None:
        return default
    if not isinstance(paths, Mapping):
        raise ConfigError([loaded.issue(("paths",), "must be a mapping of names to paths")])
    value = paths.get(key)
    if value is None:
        return default
    if not isinstance(value, str) or not value:
        raise ConfigError([loaded.issue(("paths", key), "must be a non-empty path string")])
    return value
