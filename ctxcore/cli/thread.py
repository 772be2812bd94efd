"""``ctx thread list|show|export``: the conversations a pipeline's checkpointer holds (docs/threads.md).

``list`` shows every thread saved by ``Thread.save`` with its step and size;
``show`` prints a thread's messages and explains the build its next turn would
send; ``export`` writes it as a transcript ``ctx replay`` reads
(``{"messages": [OpenAI dicts]}``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ctxcore.cli._common import fail, open_checkpointer, parse_runtime
from ctxcore.cli.explain import print_explain
from ctxcore.errors import CtxError
from ctxcore.runtime.threads import THREAD_FORMAT
from ctxcore.tools.explain import explain_payload
from ctxcore.tools.terminal import cells, make_console, make_table, show

__all__ = ["thread"]

_PIPELINE = click.option("--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False),
                         help="Pipeline file whose `checkpointer:` holds the threads.")


def _pipeline(ctx: click.Context, file: str) -> Any:
    p, _ = open_checkpointer(ctx, file, "has no checkpointer, so its threads live only in the process that ran them; add one, "
                             "e.g. `checkpointer: {type: sqlite, path: .ctx/checkpoints.db}`")
    return p


def _open(ctx: click.Context, file: str, thread_id: str) -> tuple[Any, Any]:
    p = _pipeline(ctx, file)
    try:
        if p.checkpointer.get_checkpoint(thread_id) is None:
            known = p.checkpointer.list_threads()
            hint = f"; threads: {', '.join(known[:10])}" if known else "; the checkpointer holds no threads"
            fail(f"no thread {thread_id!r} in {file}'s checkpointer{hint}")
        return p, p.thread(thread_id)
    except CtxError as exc:
        fail(f"{type(exc).__name__}: {exc}")


def _preview(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@click.group()
def thread() -> None:
    """List, show and export the conversations (threads) of a pipeline's checkpointer."""


@thread.command("list")
@_PIPELINE
@click.option("--json", "as_json", is_flag=True, help="Print JSON (stable fields) instead of a table.")
@click.pass_context
def thread_list(ctx: click.Context, pipeline_file: str, as_json: bool) -> None:
    """Every thread with its newest step, its number of messages and when it was saved."""
    cp = _pipeline(ctx, pipeline_file).checkpointer
    rows = []
    try:
        for thread_id in sorted(cp.list_threads()):
            latest: dict[str, Any] = cp.get_checkpoint(thread_id) or {}
            raw_meta, raw_state = latest.get("runtime_metadata"), latest.get("state_dump")
            meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
            state: dict[str, Any] = raw_state if isinstance(raw_state, dict) else {}
            is_thread = meta.get("format") == THREAD_FORMAT
            rows.append({"thread_id": thread_id, "step": latest.get("step"), "created_at": latest.get("created_at"),
                         "messages": len(state.get("messages") or []) if is_thread else None, "thread": is_thread})
    except CtxError as exc:
        fail(f"{type(exc).__name__}: {exc}")
    if as_json:
        click.echo(json.dumps(rows, indent=2, sort_keys=True))
        return
    console = make_console()
    table = make_table(console, f"threads in {pipeline_file}", ("thread", "step", "messages", "saved at"),
                       wrap=("thread", "messages"))
    for r in rows:
        table.add_row(*cells(r["thread_id"], str(r["step"]),
                             str(r["messages"]) if r["thread"] else "(not a Thread checkpoint)", str(r["created_at"])))
    show(console, table)


@thread.command("show")
@click.argument("thread_id")
@_PIPELINE
@click.option("--runtime", "runtime_items", multiple=True, metavar="KEY=VALUE", help="Runtime values for the explained build.")
@click.option("--json", "as_json", is_flag=True, help="Print {thread_id, step, messages, next_build} as JSON.")
@click.pass_context
def thread_show(ctx: click.Context, thread_id: str, pipeline_file: str, runtime_items: tuple[str, ...], as_json: bool) -> None:
    """THREAD_ID's messages, then the build its next turn would send, explained."""
    _, t = _open(ctx, pipeline_file, thread_id)
    try:
        built = t.build(parse_runtime(runtime_items))
    except CtxError as exc:
        fail(f"{type(exc).__name__}: {exc} (building thread {thread_id!r} with {pipeline_file})")
    if as_json:
        click.echo(json.dumps({"thread_id": thread_id, "step": t.step, "messages": [m.to_openai() for m in t.messages],
                               "next_build": explain_payload(built.report)}, indent=2, ensure_ascii=False))
        return
    console = make_console()
    table = make_table(console, f"thread {thread_id} at step {t.step}: {len(t.messages)} messages",
                       ("#", "role", "text", "tool calls"), right=("#",), wrap=("text", "tool calls"))
    for i, m in enumerate(t.messages):
        table.add_row(*cells(str(i), m.role, _preview(m.text), ", ".join(c.name for c in m.tool_calls)))
    show(console, table)
    console.print("next build:")
    print_explain(built.report, console)


@thread.command("export")
@click.argument("thread_id")
@_PIPELINE
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here instead of stdout.")
@click.pass_context
def thread_export(ctx: click.Context, thread_id: str, pipeline_file: str, output: str | None) -> None:
    """THREAD_ID as a transcript `ctx replay` reads: {"messages": [OpenAI messages]}."""
    _, t = _open(ctx, pipeline_file, thread_id)
    text = json.dumps({"messages": [m.to_openai() for m in t.messages]}, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc}")
