"""Which first-party distribution provides which component, and how to install it.

Used for the hints of a missing component (``unknown counter 'tiktoken' —
provided by ctxcore-counters: pip install "ctxcore-llm[standard]"``) and of an
empty ``ctx plugins list``. The table is data, not a plugin lookup: it names
what ctxcore's own distributions register, so it is right even when none of
them is installed; ``tests/test_first_party.py`` checks it against the
installed plugins.
"""

from __future__ import annotations

__all__ = ["CORE_DISTRIBUTION", "FIRST_PARTY", "STANDARD_INSTALL", "install_command", "install_hint", "provider_of"]

#: the core's distribution name (the import package is ``ctxcore``; that name is taken on the index).
CORE_DISTRIBUTION = "ctxcore-llm"

#: the one-line install of the core and every light plugin.
STANDARD_INSTALL = f'pip install "{CORE_DISTRIBUTION}[standard]"'

#: distribution -> (extra of the core that installs it, {kind: names}).
FIRST_PARTY: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
    "ctxcore-providers": ("standard", {"provider": (
        "archived_summary", "bootstrap_files", "history", "identity", "memory_file", "memory_recall",
        "recent_memory", "runtime_context", "sections", "skills", "static_prompt", "tools_desc")}),
    "ctxcore-filters": ("standard", {"filter": (
        "budget_hint", "compaction", "max_messages", "merge_same_role", "offload", "recall", "token_budget")}),
    "ctxcore-counters": ("standard", {"counter": ("anthropic_count", "approximate", "openai_count", "tiktoken")}),
    "ctxcore-checkpointers": ("standard", {"checkpointer": ("jsonl", "memory", "null", "sqlite"), "thread_store": ("jsonl", "memory", "sqlite")}),
    "ctxcore-memory": ("standard", {"memory": ("json", "sqlite")}),
    "ctxcore-postgres": ("postgres", {"checkpointer": ("postgres",), "thread_store": ("postgres",), "memory": ("postgres",)}),
    "ctxcore-redis": ("redis", {"thread_store": ("redis",)}),
    "ctxcore-counter-hf": ("huggingface", {"counter": ("huggingface",)}),
    "ctxcore-memory-mem0": ("mem0", {"memory": ("mem0",)}),
}


def provider_of(kind: str, name: str) -> str | None:
    """The first-party distribution registering ``name`` of ``kind``, or ``None``."""
    for distribution, (_, components) in FIRST_PARTY.items():
        if name in components.get(kind, ()):
            return distribution
    return None


def install_command(distribution: str) -> str:
    """The ``pip install`` line that brings ``distribution`` in through the core's extras."""
    extra = FIRST_PARTY[distribution][0]
    return f'pip install "{CORE_DISTRIBUTION}[{extra}]"'


def install_hint(kind: str, name: str) -> str | None:
    """``provided by DIST: pip install ...`` for a first-party component, else ``None``."""
    distribution = provider_of(kind, name.rsplit(":", 1)[-1])
    if distribution is None:
        return None
    return f"provided by {distribution}: {install_command(distribution)}"
