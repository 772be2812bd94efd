"""Recall of the memory stores on the labelled set in ctxcore.testing.harness.memory_recall.

    .venv/bin/python bench/memory_recall.py [--store json --store sqlite ...] [--pg-dsn DSN]

Prints recall@1, recall@3 and recall@5 per store (a rich table, and the
markdown table for docs/memory.md with --markdown). Each store starts empty in
a temporary directory (postgres: a fresh schema, dropped afterwards). Stores
are created through the plugin registry, so any installed memory store (mem0)
can be measured by name; pass its options as JSON with
--options NAME='{"...": "..."}'.

The default stores are json, sqlite and postgres. postgres uses --pg-dsn, else
CTXCORE_TEST_PG_DSN, else a throwaway cluster (ctxcore.testing.harness.postgres) when
PostgreSQL is installed; without any of them its row is left out with a note.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ctxcore.plugins.host import PluginHost
from ctxcore.testing.harness.memory_recall import (
    RECALL_MEMORIES,
    RECALL_QUERIES,
    recall_at_k,
)

KS = (1, 3, 5)


def _create(host: PluginHost, name: str, directory: Path, options: dict[str, Any]) -> Any:
    component = host.registry.get("memory", name)
    defaults = {"json": {"path": str(directory / "memory.json")}, "sqlite": {"path": str(directory / "memory.db")}}
    return component.create({**defaults.get(name, {}), **options})


@contextlib.contextmanager
def _postgres_dsn(given: str | None) -> Iterator[str | None]:
    """The DSN to measure postgres on: given, from the environment, or a throwaway cluster (None if none)."""
    dsn = given or os.environ.get("CTXCORE_TEST_PG_DSN")
    if dsn:
        yield dsn
        return
    try:
        from ctxcore.testing.harness.postgres import (
            PostgresUnavailable,
            throwaway_cluster,
        )
    except ImportError as exc:  # pytest missing: no throwaway cluster helper
        Console(stderr=True).print(f"postgres skipped: {exc}")
        yield None
        return
    try:
        cluster = throwaway_cluster()
        started = cluster.__enter__()
    except PostgresUnavailable as exc:
        Console(stderr=True).print(f"postgres skipped (give --pg-dsn): {exc}")
        yield None
        return
    try:
        yield started
    finally:
        cluster.__exit__(None, None, None)


def _drop_schema(dsn: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", action="append", help="registered memory store name (repeatable); default json, sqlite")
    parser.add_argument("--options", action="append", default=[], metavar="NAME=JSON", help="options for one store")
    parser.add_argument("--markdown", action="store_true", help="also print the markdown table")
    parser.add_argument("--pg-dsn", help="PostgreSQL server for the postgres store (default: CTXCORE_TEST_PG_DSN or a throwaway cluster)")
    args = parser.parse_args()
    stores = args.store or ["json", "sqlite", "postgres"]
    options = {}
    for item in args.options:
        name, _, raw = item.partition("=")
        options[name] = json.loads(raw)
    host = PluginHost.load()
    rows = []
    with contextlib.ExitStack() as stack:
        for name in stores:
            extra: dict[str, Any] = {}
            if name == "postgres" and "dsn" not in options.get(name, {}):
                dsn = stack.enter_context(_postgres_dsn(args.pg_dsn))
                if dsn is None:
                    continue
                extra["dsn"] = dsn
            with tempfile.TemporaryDirectory() as tmp:
                recalls = []
                for k in KS:
                    opts = {**extra, **options.get(name, {})}
                    if name == "postgres":
                        opts["schema"] = f"ctx_bench_{uuid.uuid4().hex[:12]}"
                    store = _create(host, name, Path(tmp) / f"k{k}", opts)
                    try:
                        recalls.append(recall_at_k(store, k=k, namespace=f"recall-k{k}").recall)
                    finally:
                        if hasattr(store, "close"):
                            store.close()
                        if name == "postgres":
                            _drop_schema(opts["dsn"], opts["schema"])
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
