"""``ctx checkpoint list|show|prune``: inspect and trim the checkpoints of a pipeline's checkpointer.

Every command opens the checkpointer named by the pipeline's ``checkpointer:``
slot, so the same commands work for jsonl, sqlite and postgres stores.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, NoReturn

import click

from ctxcore.cli._common import fail, open_checkpointer
from ctxcore.errors import CtxError

__all__ = ["checkpoint"]

_PIPELINE = click.option("--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False, allow_dash=True),
                         help="Pipeline file whose `checkpointer:` to open.")


def _checkpointer(ctx: click.Context, file: str) -> Any:
    p, cp = open_checkpointer(ctx, file, "has no checkpointer; add one, e.g. `checkpointer: {type: sqlite, path: .ctx/checkpoints.db}`")
    spec = p.spec.checkpointer
    ctx.meta["ctx_checkpointer"] = f"checkpointer '{spec.type if spec else '?'}' of {file}"
    return cp


def _store_failed(ctx: click.Context, exc: Exception) -> NoReturn:
    """Exit 1 for a store error: ctxcore's own errors as they are, OS/SQLite errors with the step and the fix."""
    if isinstance(exc, CtxError):
        fail(f"{type(exc).__name__}: {exc}")
    where = ctx.meta.get("ctx_checkpointer", "the checkpointer")
    fail(f"{type(exc).__name__}: {exc} ({where}: set its 'path' to a location this user can create and write)")


_STORE_ERRORS = (CtxError, OSError, sqlite3.Error)


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


def _table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    from ctxcore.tools.terminal import cells, make_console, make_table, show

    console = make_console()
    table = make_table(console, title, columns)
    for row in rows:
        table.add_row(*cells(*row))
    show(console, table)


@click.group()
def checkpoint() -> None:
    """Inspect and prune the checkpoints of a pipeline's checkpointer."""


@checkpoint.command("list")
@_PIPELINE
@click.option("--thread", "thread_id", help="List this thread's checkpoints instead of the threads.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (stable fields) instead of a table.")
@click.pass_context
def checkpoint_list(ctx: click.Context, pipeline_file: str, thread_id: str | None, as_json: bool) -> None:
    """List the threads (with their newest step), or one thread's checkpoints."""
    cp = _checkpointer(ctx, pipeline_file)
    try:
        if thread_id is None:
            rows = []
            for thread in cp.list_threads():
                history = cp.list_checkpoints(thread)
                if history:
                    latest = history[-1]
                    rows.append({"thread_id": thread, "checkpoints": len(history), "latest_step": latest["step"], "latest_created_at": latest["created_at"]})
            if as_json:
                click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
            else:
                _table("threads", ["thread", "checkpoints", "latest step", "latest created at"],
                       [[r["thread_id"], str(r["checkpoints"]), str(r["latest_step"]), r["latest_created_at"]] for r in rows])
            return
        history = cp.list_checkpoints(thread_id)
    except _STORE_ERRORS as exc:
        _store_failed(ctx, exc)
    if not history:
        fail(f"thread {thread_id!r} has no checkpoints")
    items = [{"step": c["step"], "created_at": c["created_at"], "state_bytes": _size(c["state_dump"])} for c in history]
    if as_json:
        click.echo(json.dumps(items, indent=2))
    else:
        _table(f"checkpoints of {thread_id}", ["step", "created at", "state bytes"],
               [[str(i["step"]), i["created_at"], str(i["state_bytes"])] for i in items])


@checkpoint.command("show")
@_PIPELINE
@click.argument("thread_id")
@click.option("--step", type=int, help="Show this step instead of the latest.")
@click.pass_context
def checkpoint_show(ctx: click.Context, pipeline_file: str, thread_id: str, step: int | None) -> None:
    """Print a checkpoint of THREAD_ID (the latest unless --step) as JSON."""
    cp = _checkpointer(ctx, pipeline_file)
    try:
        if step is None:
            found = cp.get_checkpoint(thread_id)
        else:
            found = next((c for c in cp.list_checkpoints(thread_id) if c["step"] == step), None)
    except _STORE_ERRORS as exc:
        _store_failed(ctx, exc)
    if found is None:
        what = f"no checkpoint at step {step}" if step is not None else "no checkpoints"
        fail(f"thread {thread_id!r} has {what} (see `ctx checkpoint list --pipeline {pipeline_file}`)")
    click.echo(json.dumps(found, indent=2, ensure_ascii=False))


@checkpoint.command("prune")
@_PIPELINE
@click.argument("thread_ids", nargs=-1)
@click.option("--keep-last", type=click.IntRange(min=1), required=True, help="How many of the newest checkpoints to keep.")
@click.option("--all", "all_threads", is_flag=True, help="Prune every thread.")
@click.pass_context
def checkpoint_prune(ctx: click.Context, pipeline_file: str, thread_ids: tuple[str, ...], keep_last: int, all_threads: bool) -> None:
    """Keep only the newest --keep-last checkpoints of THREAD_IDS (or of every thread with --all)."""
    if bool(thread_ids) == all_threads:
        fail("name the threads to prune, or pass --all (not both)", code=2)
    cp = _checkpointer(ctx, pipeline_file)
    try:
        threads = cp.list_threads() if all_threads else list(thread_ids)
        total = 0
        for thread in threads:
            removed = cp.prune(thread, keep_last=keep_last)
            total += removed
            click.echo(f"{thread}: removed {removed}")
    except _STORE_ERRORS as exc:
        _store_failed(ctx, exc)
    click.echo(f"removed {total} checkpoints from {len(threads)} threads", err=True)
