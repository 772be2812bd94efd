"""Recall of the memory stores on the labelled set in ctxcore.testing.memory_recall.

    .venv/bin/python bench/memory_recall.py [--store json --store sqlite ...]

Prints recall@1, recall@3 and recall@5 per store (a rich table, and the
markdown table for docs/memory.md with --markdown). Each store starts empty in
a temporary directory. Stores are created through the plugin registry, so any
installed memory store (postgres, mem0) can be measured by name; pass its
options as JSON with --options NAME='{"dsn": "..."}'.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ctxcore.plugins import PluginHost
from ctxcore.testing.memory_recall import RECALL_MEMORIES, RECALL_QUERIES, recall_at_k

KS = (1, 3, 5)


def _create(host: PluginHost, name: str, directory: Path, options: dict[str, Any]) -> Any:
    component = host.registry.get("memory", name)
    defaults = {"json": {"path": str(directory / "memory.json")}, "sqlite": {"path": str(directory / "memory.db")}}
    return component.create({**defaults.get(name, {}), **options})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", action="append", help="registered memory store name (repeatable); default json, sqlite")
    parser.add_argument("--options", action="append", default=[], metavar="NAME=JSON", help="options for one store")
    parser.add_argument("--markdown", action="store_true", help="also print the markdown table")
    args = parser.parse_args()
    stores = args.store or ["json", "sqlite"]
    options = {}
    for item in args.options:
        name, _, raw = item.partition("=")
        options[name] = json.loads(raw)
    host = PluginHost.load()
    rows = []
    for name in stores:
        with tempfile.TemporaryDirectory() as tmp:
            recalls = []
            for k in KS:
                store = _create(host, name, Path(tmp) / f"k{k}", options.get(name, {}))
                recalls.append(recall_at_k(store, k=k, namespace=f"recall-k{k}").recall)
                if hasattr(store, "close"):
                    store.close()
            rows.append((name, recalls))
    table = Table(title=f"recall on {len(RECALL_MEMORIES)} memories, {len(RECALL_QUERIES)} questions")
    table.add_column("store")
    for k in KS:
        table.add_column(f"recall@{k}", justify="right")
    for name, recalls in rows:
        table.add_row(name, *(f"{r:.3f}" for r in recalls))
    Console().print(table)
    if args.markdown:
        print("| store | " + " | ".join(f"recall@{k}" for k in KS) + " |")
        print("|---|" + "---:|" * len(KS))
        for name, recalls in rows:
            print(f"| {name} | " + " | ".join(f"{r:.3f}" for r in recalls) + " |")


if __name__ == "__main__":
    main()
