"""``ctx count`` and ``ctx counters compare``: token counts of files from the command line.

A counter is named ``NAME[:ARG]``: ``NAME`` is a registered counter (or
``plugin:name``) and ``ARG`` sets the first option of its config model
(``tiktoken:o200k_base`` sets ``encoding``, ``approximate:o200k`` sets
``family``, ``huggingface:/path/tokenizer.json`` sets ``path``).
"""

from __future__ import annotations

import json
import sys
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import click

from ctxcore.cli._common import fail, max_input_bytes, read_input, shown, state
from ctxcore.plugins.registry import (
    Component,
    ComponentConflict,
    Registry,
    UnknownComponent,
)

__all__ = ["count", "counters", "counters_compare", "resolve_counter", "chunks"]

#: input size from which a progress bar is shown (on a terminal) and files are counted in chunks.
LARGE_INPUT = 1 << 20
#: target chunk size when counting a large text.
CHUNK_CHARS = 256 * 1024


@dataclass(frozen=True)
class CounterChoice:
    """A counter spec resolved to a component and its options."""

    spec: str
    component: Component
    options: dict[str, Any]

    def create(self) -> Any:
        """Instantiate the counter (raises whatever the factory raises)."""
        return self.component.create(self.options)


def resolve_counter(registry: Registry, spec: str) -> CounterChoice:
    """Resolve ``NAME[:ARG]`` (NAME may be ``plugin:name``) to a component and options.

    Raises:
        UnknownComponent, ComponentConflict: no such counter (with suggestions), or ambiguous.
        click.UsageError: ARG given to a counter whose config takes no options.
    """
    if ":" not in spec:
        return CounterChoice(spec, _lookup(registry, spec), {})
    left, arg = spec.rsplit(":", 1)
    try:
        component = _lookup(registry, left)
    except (UnknownComponent, ComponentConflict) as left_error:
        try:  # not NAME:ARG; maybe plugin:name
            return CounterChoice(spec, _lookup(registry, spec), {})
        except UnknownComponent as whole_error:
            suggested = getattr(left_error, "suggestions", None)
            raise (left_error if suggested or not whole_error.suggestions else whole_error) from None
    fields = list(component.config.model_fields)
    if not fields:
        raise click.UsageError(f"counter {left!r} takes no options, so {spec!r} has nothing to set with {arg!r}")
    return CounterChoice(spec, component, {fields[0]: arg})


def _lookup(registry: Registry, name: str) -> Component:
    return registry.get("counter", name)


def chunks(text: str, size: int = CHUNK_CHARS) -> Iterator[str]:
    """Pieces of ``text`` of about ``size`` characters, cut before a line that starts with a non-space.

    No tiktoken pre-token (and no ``approximate`` piece) spans such a cut, so the
    sum of the pieces' counts equals the count of the whole text for tiktoken;
    ``approximate`` rounds up once per call, so it may add under one token per cut.
    """
    start = 0
    while len(text) - start > size:
        cut = start + size
        while cut < len(text) and not (text[cut - 1] == "\n" and not text[cut].isspace()):
            cut += 1
        if cut >= len(text):
            break
        yield text[start:cut]
        start = cut
    if start < len(text):
        yield text[start:]


def _read(name: str) -> tuple[str, str]:
    data = read_input(name, "text", max_input_bytes())  # fstat-capped; '-' is stdin; FIFOs refused
    return shown(name), data.decode("utf-8", errors="replace")


def _create(choice: CounterChoice) -> Any:
    try:
        return choice.create()
    except Exception as exc:  # factories raise many types; the message is what the user needs
        fail(f"counter {choice.spec!r} could not be created: {_describe(exc)}")


def _resolve_or_fail(ctx: click.Context, spec: str, option: str) -> CounterChoice:
    try:
        return resolve_counter(state(ctx).host.registry, spec)
    except (UnknownComponent, ComponentConflict) as exc:
        fail(f"{option}: {exc}")


def _count_texts(counters: list[Any], texts: dict[str, str], progress: bool | None) -> list[dict[str, int]]:
    """Per counter, per file token counts; a rich progress bar on stderr for large input."""
    total_chars = sum(len(t) for t in texts.values()) * len(counters)
    show = progress if progress is not None else (total_chars >= LARGE_INPUT and sys.stderr.isatty())
    results: list[dict[str, int]] = [{} for _ in counters]
    if not show:
        for i, counter in enumerate(counters):
            for name, text in texts.items():
                results[i][name] = sum(counter.count_text(piece) for piece in chunks(text))
        return results
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    from ctxcore.tools.terminal import make_console

    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeRemainingColumn())
    with Progress(*columns, console=make_console(stderr=True), transient=True) as bar:
        task = bar.add_task("counting", total=total_chars)
        for i, counter in enumerate(counters):
            for name, text in texts.items():
                bar.update(task, description=f"{getattr(counter, 'name', '?')} {name}")
                total = 0
                for piece in chunks(text):
                    total += counter.count_text(piece)
                    bar.advance(task, len(piece))
                results[i][name] = total
    return results


_PROGRESS = click.option("--progress/--no-progress", default=None,
                         help="Show a progress bar on stderr (default: for input over 1 MiB on a terminal).")


# -------------------------------------------------------------------- count
@click.command()
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--counter", "counter_spec", default="tiktoken", show_default=True, metavar="NAME[:ARG]",
              help="Registered counter (or plugin:name); ARG sets its first option: tiktoken:o200k_base, approximate:o200k.")
@click.option("--json", "as_json", is_flag=True, help='Print {"counter": NAME, "files": {FILE: TOKENS}, "total": N} as JSON.')
@_PROGRESS
@click.pass_context
def count(ctx: click.Context, files: tuple[str, ...], counter_spec: str, as_json: bool, progress: bool | None) -> None:
    """Count the tokens of FILES (standard input when none)."""
    choice = _resolve_or_fail(ctx, counter_spec, "--counter")
    counter = _create(choice)
    texts = dict(_read(name) for name in files or ("-",))
    results = _count_texts([counter], texts, progress)[0]
    total = sum(results.values())
    if as_json:
        click.echo(json.dumps({"counter": getattr(counter, "name", choice.component.name), "files": results, "total": total}, indent=2))
        return
    for name, tokens in results.items():
        click.echo(f"{tokens:>10}  {name}")
    if len(results) > 1:
        click.echo(f"{total:>10}  total")


# ----------------------------------------------------------------- counters
@click.group()
def counters() -> None:
    """Compare the installed token counters."""


def _variants(component: Component) -> list[CounterChoice]:
    """One choice per value of a Literal first option (approximate:cl100k, approximate:o200k ...), else defaults."""
    fields = component.config.model_fields
    if fields:
        first, info = next(iter(fields.items()))
        values = [v for arg in typing.get_args(info.annotation) or (info.annotation,) for v in typing.get_args(arg)
                  if typing.get_origin(arg) is typing.Literal]
        if typing.get_origin(info.annotation) is typing.Literal:
            values = list(typing.get_args(info.annotation))
        if values:
            return [CounterChoice(f"{component.name}:{v}", component, {first: v}) for v in values]
    return [CounterChoice(component.name, component, {})]


@counters.command("compare")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--reference", "reference_spec", default="tiktoken", show_default=True, metavar="NAME[:ARG]",
              help="The counter the others are measured against.")
@click.option("--counter", "counter_specs", multiple=True, metavar="NAME[:ARG]",
              help="Compare only these counters (repeatable); default: every installed counter and its variants.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@_PROGRESS
@click.pass_context
def counters_compare(ctx: click.Context, files: tuple[str, ...], reference_spec: str, counter_specs: tuple[str, ...],
                     as_json: bool, progress: bool | None) -> None:
    """Count FILES with each counter and print its error against the reference."""
    registry = state(ctx).host.registry
    reference_choice = _resolve_or_fail(ctx, reference_spec, "--reference")
    reference = _create(reference_choice)
    if counter_specs:
        choices = [_resolve_or_fail(ctx, spec, "--counter") for spec in counter_specs]
    else:
        choices = [v for c in registry.all("counter") for v in _variants(c)]
    created: list[tuple[CounterChoice, Any]] = []
    failed: list[tuple[CounterChoice, str]] = []
    for choice in choices:
        if counter_specs:  # named by the user: failing to create it is an error, as for --reference
            created.append((choice, _create(choice)))
            continue
        try:
            created.append((choice, choice.create()))
        except Exception as exc:  # a default counter that needs options (a tokenizer path) is reported, not fatal
            failed.append((choice, _why(exc)))
    texts = dict(_read(name) for name in files)
    counted = _count_texts([reference] + [c for _, c in created], texts, progress)
    ref_total = sum(counted[0].values())
    rows = []
    for (choice, counter), per_file in zip(created, counted[1:], strict=True):
        tokens = sum(per_file.values())
        error = 100.0 * (tokens - ref_total) / ref_total if ref_total else None
        rows.append({"counter": getattr(counter, "name", choice.spec), "tokens": tokens, "files": per_file,
                     "error_percent": None if error is None else round(error, 2)})
    unavailable = [{"counter": choice.spec, "error": message} for choice, message in failed]
    if as_json:
        click.echo(json.dumps({"reference": getattr(reference, "name", reference_spec), "reference_tokens": ref_total,
                               "reference_files": counted[0], "counters": rows, "unavailable": unavailable}, indent=2))
        return
    _print_comparison(getattr(reference, "name", reference_spec), ref_total, rows, unavailable)


def _describe(exc: Exception) -> str:
    """One line saying why a counter could not be created (pydantic errors as ``option: problem``)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors())
        except Exception:  # an ``errors`` attribute that is not pydantic's
            pass
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


def _why(exc: Exception) -> str:
    """Why a compared counter is unavailable, with the fix when it lacks options."""
    if callable(getattr(exc, "errors", None)):
        return f"needs options ({_describe(exc)}); name it with --counter NAME:ARG"
    return _describe(exc)


def _print_comparison(reference: str, ref_total: int, rows: list[dict[str, Any]], unavailable: list[dict[str, str]]) -> None:
    from ctxcore.tools.terminal import cells, clean, make_console, make_table, show

    console = make_console()
    table = make_table(console, f"token counts vs {reference} ({ref_total} tokens)",
                       ("counter", "tokens", "difference", "error"), right=("tokens", "difference", "error"))
    for row in rows:
        error = "n/a" if row["error_percent"] is None else f"{row['error_percent']:+.1f}%"
        table.add_row(*cells(row["counter"], str(row["tokens"]), f"{row['tokens'] - ref_total:+d}", error))
    show(console, table)
    notes = make_console(stderr=True)
    for item in unavailable:
        notes.print(clean(f"unavailable: {item['counter']}: {item['error']}"))
