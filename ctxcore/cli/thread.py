"""``ctx thread list|show|export|steps|fork|prune|migrate``: the conversations of a pipeline's thread store (docs/threads.md).

``list`` shows every thread with its latest step and size; ``show`` prints a
thread's messages and explains the build its next turn would send; ``export``
writes it as a transcript ``ctx replay`` reads (``{"messages": [OpenAI dicts]}``).
``--step N`` reads a thread as of an older step; ``--repair`` reads what is
still intact of a damaged thread. ``prune --older-than 30d`` expires idle
threads, ``prune --keep-last N`` trims step records; ``migrate`` converts
threads saved in the older whole-checkpoint format.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from ctxcore.cli._common import fail, load_pipeline, parse_runtime
from ctxcore.cli._progress import progress_bar
from ctxcore.cli.explain import print_explain
from ctxcore.errors import CheckpointCorrupt, ConfigError, CtxError
from ctxcore.kit.threadlog import idle_cutoff, parse_age, view_of
from ctxcore.model.messages import Message
from ctxcore.runtime.thread_migrate import THREAD_FORMAT, migrate_threads
from ctxcore.runtime.threads import open_thread
from ctxcore.tools.explain import explain_payload
from ctxcore.tools.terminal import cells, make_console, make_table, show

__all__ = ["thread"]

_PIPELINE = click.option("--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False),
                         help="Pipeline file whose `threads:` (or `checkpointer:`) holds the threads.")
_STEP = click.option("--step", type=click.IntRange(min=0), help="Read the thread as of this step (default: the latest).")
_REPAIR = click.option("--repair", is_flag=True, help="Read what is intact of a damaged thread (its newest readable step).")


def _pipeline(ctx: click.Context, file: str) -> Any:
    """The pipeline of ``file`` and its thread store (closed when the command ends); exit 1 when it keeps none."""
    p = load_pipeline(ctx, file)
    if p.spec.checkpointer is None and p.spec.threads is None:
        fail(f"{file} has no thread store, so its threads live only in the process that ran them; add one, "
             "e.g. `threads: {type: sqlite, path: .ctx/threads.db}` (or a `checkpointer:`)")
    try:
        store = p.thread_store()
    except ConfigError as exc:
        fail(f"{file}: {exc}")
    ctx.call_on_close(store.close)
    return p


def _open(ctx: click.Context, file: str, thread_id: str, step: int | None = None) -> tuple[Any, Any]:
    p = _pipeline(ctx, file)
    try:
        t = open_thread(p, thread_id, step=step)
        if t.step is None:
            known = p.thread_store().list_threads()
            hint = f"; threads: {', '.join(known[:10])}" if known else "; the store holds no threads"
            fail(f"no thread {thread_id!r} in {file}'s thread store{hint}")
        return p, t
    except CtxError as exc:
        fail(f"{type(exc).__name__}: {exc}")


def _salvaged(ctx: click.Context, file: str, thread_id: str) -> tuple[int, list[Message]]:
    """The newest intact step of a damaged thread and the messages it shows (``--repair``).

    The step's view applies (messages a session took back stay hidden); a
    damaged view shows the step's whole log prefix instead, said on stderr, so
    nothing readable is withheld from a repair.
    """
    store = _pipeline(ctx, file).thread_store()
    snap = store.salvage(thread_id)
    if snap is None:
        fail(f"no readable step of thread {thread_id!r} in {file}'s thread store")
    try:
        shown = view_of(snap)[0]
    except CheckpointCorrupt:
        shown = snap.messages
        click.echo(f"warning: thread {thread_id!r} step {snap.record.step}: its view is damaged; showing all "
                   f"{len(shown)} messages the step's log holds (replaced ones included)", err=True)
    try:
        return snap.record.step, [Message.model_validate(m) for m in shown]
    except ValueError as exc:
        fail(f"thread {thread_id!r} step {snap.record.step}: a message is not a ctxcore message: {exc}")


def _preview(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@click.group()
def thread() -> None:
    """List, show and export the conversations (threads) of a pipeline's checkpointer."""


def _rows(p: Any) -> list[dict[str, Any]]:
    store, rows = p.thread_store(), []
    for thread_id in store.list_threads():
        steps = store.list_steps(thread_id)
        if steps:
            last = steps[-1]
            rows.append({"thread_id": thread_id, "step": last.step, "created_at": last.created_at,
                         "messages": last.messages, "thread": True, "stored": "log"})
    logged = {r["thread_id"] for r in rows}
    cp = p.checkpointer
    for thread_id in cp.list_threads() if cp is not None else []:
        if thread_id in logged:
            continue
        latest: dict[str, Any] = cp.get_checkpoint(thread_id) or {}
        raw_meta, raw_state = latest.get("runtime_metadata"), latest.get("state_dump")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        state: dict[str, Any] = raw_state if isinstance(raw_state, dict) else {}
        is_thread = meta.get("format") == THREAD_FORMAT
        rows.append({"thread_id": thread_id, "step": latest.get("step"), "created_at": latest.get("created_at"),
                     "messages": len(state.get("messages") or []) if is_thread else None, "thread": is_thread,
                     "stored": "checkpoint"})
    return sorted(rows, key=lambda r: r["thread_id"])


@thread.command("list")
@_PIPELINE
@click.option("--json", "as_json", is_flag=True, help="Print JSON (stable fields) instead of a table.")
@click.pass_context
def thread_list(ctx: click.Context, pipeline_file: str, as_json: bool) -> None:
    """Every thread with its newest step, its number of messages and when it was saved."""
    p = _pipeline(ctx, pipeline_file)
    try:
        rows = _rows(p)
    except CtxError as exc:
        fail(f"{type(exc).__name__}: {exc}")
    if as_json:
        click.echo(json.dumps(rows, indent=2, sort_keys=True))
        return
    console = make_console()
    table = make_table(console, f"threads in {pipeline_file}", ("thread", "step", "messages", "saved at"),
                       wrap=("thread", "messages"))
    for r in rows:
        count = str(r["messages"]) if r["thread"] else "(not a Thread checkpoint)"
        if r["stored"] == "checkpoint" and r["thread"]:
            count += " (old format: `ctx thread migrate`)"
        table.add_row(*cells(r["thread_id"], str(r["step"]), count, str(r["created_at"])))
    show(console, table)


@thread.command("show")
@click.argument("thread_id")
@_PIPELINE
@_STEP
@_REPAIR
@click.option("--runtime", "runtime_items", multiple=True, metavar="KEY=VALUE", help="Runtime values for the explained build.")
@click.option("--json", "as_json", is_flag=True, help="Print {thread_id, step, messages, next_build} as JSON.")
@click.pass_context
def thread_show(ctx: click.Context, thread_id: str, pipeline_file: str, step: int | None, repair: bool,
                runtime_items: tuple[str, ...], as_json: bool) -> None:
    """THREAD_ID's messages, then the build its next turn would send, explained (not with --repair)."""
    if repair:
        at, messages = _salvaged(ctx, pipeline_file, thread_id)
        built = None
    else:
        _, t = _open(ctx, pipeline_file, thread_id, step)
        at, messages = t.step, list(t.messages)
        try:
            built = t.build(parse_runtime(runtime_items))
        except CtxError as exc:
            fail(f"{type(exc).__name__}: {exc} (building thread {thread_id!r} with {pipeline_file})")
    if as_json:
        click.echo(json.dumps({"thread_id": thread_id, "step": at, "messages": [m.to_openai() for m in messages],
                               "next_build": explain_payload(built.report) if built else None}, indent=2, ensure_ascii=False))
        return
    console = make_console()
    note = " (repair: the newest intact step)" if repair else ""
    table = make_table(console, f"thread {thread_id} at step {at}{note}: {len(messages)} messages",
                       ("#", "role", "text", "tool calls"), right=("#",), wrap=("text", "tool calls"))
    for i, m in enumerate(messages):
        table.add_row(*cells(str(i), m.role, _preview(m.text), ", ".join(c.name for c in m.tool_calls)))
    show(console, table)
    if built is not None:
        console.print("next build:")
        print_explain(built.report, console)


@thread.command("export")
@click.argument("thread_id")
@_PIPELINE
@_STEP
@_REPAIR
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here instead of stdout.")
@click.pass_context
def thread_export(ctx: click.Context, thread_id: str, pipeline_file: str, step: int | None, repair: bool, output: str | None) -> None:
    """THREAD_ID as a transcript `ctx replay` reads: {"messages": [OpenAI messages]}."""
    messages = _salvaged(ctx, pipeline_file, thread_id)[1] if repair else list(_open(ctx, pipeline_file, thread_id, step)[1].messages)
    with progress_bar(ctx, "exporting", len(messages)) as advance:
        converted = []
        for k, m in enumerate(messages, 1):
            converted.append(m.to_openai())
            if k % 200 == 0 or k == len(messages):
                advance(k, len(messages))
    text = json.dumps({"messages": converted}, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc}")


@thread.command("steps")
@click.argument("thread_id")
@_PIPELINE
@click.option("--json", "as_json", is_flag=True, help="Print the step records as JSON.")
@click.pass_context
def thread_steps(ctx: click.Context, thread_id: str, pipeline_file: str, as_json: bool) -> None:
    """THREAD_ID's saved steps, oldest first: open one with `ctx thread show ID --step N`."""
    try:
        records = [r.to_dict() for r in _pipeline(ctx, pipeline_file).thread_store().list_steps(thread_id)]
    except CtxError as exc:
        fail(f"{type(exc).__name__}: {exc}")
    if not records:
        fail(f"no thread {thread_id!r} in {pipeline_file}'s thread store")
    if as_json:
        click.echo(json.dumps(records, indent=2, sort_keys=True, ensure_ascii=False))
        return
    console = make_console()
    table = make_table(console, f"steps of {thread_id}", ("step", "messages", "saved at"), right=("step", "messages"))
    for r in records:
        table.add_row(*cells(str(r["step"]), str(r["messages"]), r["created_at"]))
    show(console, table)


@thread.command("fork")
@click.argument("thread_id")
@click.argument("new_thread_id")
@_PIPELINE
@_STEP
@click.pass_context
def thread_fork(ctx: click.Context, thread_id: str, new_thread_id: str, pipeline_file: str, step: int | None) -> None:
    """Copy THREAD_ID as of --step (default: the latest) into NEW_THREAD_ID."""
    try:
        record = _pipeline(ctx, pipeline_file).thread_store().fork(thread_id, new_thread_id, step)
    except CtxError as exc:
        fail(f"{type(exc).__name__}: {exc}")
    click.echo(f"forked {thread_id} at step {record.step} into {new_thread_id} ({record.messages} messages)")


@thread.command("prune")
@_PIPELINE
@click.option("--older-than", "older_than", metavar="AGE", help="Delete threads idle longer than AGE (45s, 90m, 12h, 30d, 2w).")
@click.option("--keep-last", type=click.IntRange(min=1), help="Keep only the newest N step records of each thread.")
@click.option("--thread", "thread_id", help="Only this thread (with --keep-last).")
@click.pass_context
def thread_prune(ctx: click.Context, pipeline_file: str, older_than: str | None, keep_last: int | None, thread_id: str | None) -> None:
    """Expire idle threads (--older-than) and/or trim old step records (--keep-last)."""
    if older_than is None and keep_last is None:
        fail("ctx thread prune needs --older-than AGE and/or --keep-last N")
    try:
        age: timedelta | None = parse_age(older_than) if older_than is not None else None
    except ValueError as exc:
        fail(f"--older-than: {exc}")
    store = _pipeline(ctx, pipeline_file).thread_store()
    try:
        if age is not None:
            gone = store.expire(idle_cutoff(age))
            click.echo(f"expired {len(gone)} thread(s) idle for more than {older_than}" + (f": {', '.join(gone[:20])}" if gone else ""))
        if keep_last is not None:
            threads = [thread_id] if thread_id else store.list_threads()
            removed = sum(store.prune(t, keep_last) for t in threads)
            click.echo(f"removed {removed} step record(s), kept the newest {keep_last} of {len(threads)} thread(s)")
    except CtxError as exc:
        fail(f"{type(exc).__name__}: {exc}")


@thread.command("migrate")
@_PIPELINE
@click.pass_context
def thread_migrate(ctx: click.Context, pipeline_file: str) -> None:
    """Convert threads saved as whole checkpoints (older versions) into the thread log."""
    p = _pipeline(ctx, pipeline_file)
    try:
        with progress_bar(ctx, "migrating", 0) as advance:
            done = migrate_threads(p, open_thread, on_thread=advance)
    except CtxError as exc:
        fail(f"{type(exc).__name__}: {exc}")
    for thread_id, step in done:
        click.echo(f"converted {thread_id} (now step {step})")
    click.echo(f"{len(done)} thread(s) converted")
