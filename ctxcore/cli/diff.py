"""``ctx diff``: what changed between two builds of one pipeline, and what broke the prompt cache.

Two states (``ctx diff --pipeline P A.json B.json``) or two calls of a replay
(``ctx diff --pipeline P --replay SESSION.json [--calls I J]``). Prints plain
text lines (no colour, no markup, so piping and redirecting give the same
text), ``--json`` prints :func:`ctxcore.tools.diff.diff_builds`'s dict, and
``--html OUT`` writes the later build's report page with the diff as a section.
The work is :mod:`ctxcore.tools.diff`; this module only reads files and prints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ctxcore.cli._common import echo_issues, fail, load_pipeline, parse_runtime, read_json, read_state
from ctxcore.engine.builder import BuiltContext
from ctxcore.errors import ConfigError, CtxError
from ctxcore.tools.diff import diff_builds, diff_replay, diff_thread, format_diff
from ctxcore.tools.html_report import pipeline_context, render_html
from ctxcore.tools.replay import TranscriptError, load_transcript
from ctxcore.tools.terminal import clean

__all__ = ["diff"]


def _states(p: Any, files: tuple[str, ...], runtime: dict[str, str]) -> tuple[dict[str, Any], BuiltContext]:
    """Both states built with one builder (so provider ids line up), then compared."""
    states = [read_state(f) for f in files]
    builder = p.builder()
    builds = []
    for f, s in zip(files, states, strict=True):
        try:
            builds.append(builder.build(s, runtime))
        except CtxError as exc:
            fail(f"{f}: {type(exc).__name__}: {exc}")
    d = diff_builds(builds[0], builds[1], labels=files, tools=(states[0].get("tools"), states[1].get("tools")))
    return d, builds[1]


def _replay(p: Any, transcript: str, calls: tuple[int, int] | None, runtime: dict[str, str]) -> tuple[dict[str, Any], BuiltContext]:
    try:
        messages, state = load_transcript(read_json(transcript, "transcript"), source=transcript)
    except TranscriptError as exc:
        fail(str(exc))
    try:
        return diff_replay(p.builder(), messages, state=state, runtime=runtime, calls=calls)
    except ValueError as exc:
        fail(f"{transcript}: {exc}")
    except CtxError as exc:
        fail(f"{transcript}: {type(exc).__name__}: {exc} (replaying the session through the pipeline)")


def _thread(p: Any, thread_id: str, steps: tuple[int, int] | None, runtime: dict[str, str]) -> tuple[dict[str, Any], BuiltContext]:
    if p.spec.checkpointer is None and p.spec.threads is None:
        fail(f"ctx diff --thread: the pipeline {p.spec.name} names no thread store, so it has no saved threads; "
             "add a `threads:` (or `checkpointer:`) section (docs/threads.md)")
    try:
        return diff_thread(p.builder(), p.thread_store(), thread_id, steps=steps, runtime=runtime)
    except ValueError as exc:
        fail(f"ctx diff: {exc}")
    except CtxError as exc:
        fail(f"ctx diff: {type(exc).__name__}: {exc} (thread {thread_id!r})")


@click.command("diff")
@click.argument("states", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False), help="Pipeline YAML both builds use.")
@click.option("--replay", "transcript", type=click.Path(dir_okay=False), help="Compare two calls of this recorded session instead of two states.")
@click.option("--calls", nargs=2, type=click.IntRange(min=0), metavar="I J",
              help="With --replay: the call indexes to compare (`index` in `ctx replay --json`); default: the worst cache miss.")
@click.option("--thread", "thread_id", help="Compare two saved turns of this thread (the pipeline's checkpointer) instead.")
@click.option("--steps", nargs=2, type=click.IntRange(min=0), metavar="I J",
              help="With --thread: the saved steps to compare; default: the last two.")
@click.option("--json", "as_json", is_flag=True, help="Print the diff as JSON.")
@click.option("--html", "html_file", type=click.Path(dir_okay=False, writable=True), help="Write the later build's report with the diff as a section.")
@click.option("--runtime", "runtime_items", multiple=True, metavar="KEY=VALUE", help="Runtime values passed to every build.")
@click.pass_context
def diff(ctx: click.Context, states: tuple[str, ...], pipeline_file: str, transcript: str | None,
         calls: tuple[int, int] | None, thread_id: str | None, steps: tuple[int, int] | None, as_json: bool, html_file: str | None, runtime_items: tuple[str, ...]) -> None:
    """Compare two builds of PIPELINE: two STATES (A.json B.json), two calls of a --replay session, or two turns of a --thread.

    Shows which messages entered, left, were compressed or changed, the first
    position where the request prefix differs (what breaks the prompt cache)
    with the filter that made it differ, and the token delta per source.
    """
    _check_sources(states, transcript, calls, thread_id, steps)
    runtime = parse_runtime(runtime_items)
    p = load_pipeline(ctx, pipeline_file)
    try:
        p.builder()
    except ConfigError as exc:
        echo_issues(exc)
        fail(f"{pipeline_file}: components could not be created")
    if thread_id is not None:
        d, later = _thread(p, thread_id, steps, runtime)
    elif transcript is None:
        d, later = _states(p, states, runtime)
    else:
        d, later = _replay(p, transcript, calls, runtime)
    if html_file:
        model, kinds = pipeline_context(p)
        page = render_html(later, model=model, source_kinds=kinds, diff=d,
                           title=f"ctx diff: {d['a']['label']} -> {d['b']['label']}")
        try:
            Path(html_file).write_text(page, encoding="utf-8")
        except OSError as exc:
            fail(f"cannot write {html_file}: {exc.strerror}")
        click.echo(f"wrote {html_file}", err=True)
    if as_json:
        click.echo(json.dumps(d, indent=2, ensure_ascii=False))
        return
    for line in format_diff(d):
        click.echo(clean(line))  # message previews are user text: control characters shown as escapes


def _check_sources(states: tuple[str, ...], transcript: str | None, calls: tuple[int, int] | None,
                   thread_id: str | None, steps: tuple[int, int] | None) -> None:
    """Fail with the fix unless the options name exactly one pair to compare: two states, a replay or a thread."""
    if calls is not None and transcript is None:
        fail("ctx diff: --calls needs --replay SESSION.json")
    if steps is not None and thread_id is None:
        fail("ctx diff: --steps needs --thread THREAD_ID")
    if thread_id is not None and (transcript is not None or states):
        fail("ctx diff: give one of two state files, --replay SESSION.json or --thread THREAD_ID")
    if transcript is None and thread_id is None and len(states) != 2:
        fail("ctx diff: give two state files (A.json B.json), or --replay SESSION.json [--calls I J]")
    if transcript is not None and states:
        fail("ctx diff: give either two state files or --replay SESSION.json, not both")
