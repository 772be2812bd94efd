"""What changed between two builds: messages in and out, the first prefix difference, tokens per source.

:func:`diff_builds` compares two :class:`BuiltContext` objects of one pipeline
(two states, or two calls of a replay). Messages are the same message when
they have the same id (the history provider derives ids from position and
content, so a conversation that grew keeps its ids):

- **entered**: sent by B, not by A (a new turn, a summary, a compacted result);
- **left**: sent by A, dropped by B (``by`` names the filter) or no longer provided;
- **compressed**: sent by A, replaced by a shorter message in B (``by``, ``stage``);
- **changed**: the same id sent by both with different content, or a
  provider's message replaced by another one of the same source and role
  (a runtime block with a new time in it).

The **prefix** is what a provider's prompt cache can reuse: the tool schemas
and the leading messages B sends exactly as A sent them (role, content, name,
tool calls; the same rule as :class:`ctxcore.tools.replay.PrefixTracker`).
``prefix.first_difference`` names the first message that differs and the
filter (or provider) that made it differ: what broke the cache.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ctxcore.engine.builder import BuiltContext
from ctxcore.engine.report import MessageRecord
from ctxcore.kit.threadlog import view_of
from ctxcore.redaction import redact_text

__all__ = ["diff_builds", "diff_replay", "diff_thread", "format_diff"]


def _item(r: MessageRecord, **extra: Any) -> dict[str, Any]:
    return {"id": r.id, "role": r.role, "source": r.source, "zone": r.zone, "tokens": r.tokens or 0,
            "preview": redact_text(r.preview), **extra}


def _describe(r: MessageRecord) -> str:
    return f"{r.role} message of {r.source or 'unknown source'} {redact_text(r.preview)!r}"


class _Side:
    """One build, indexed: records by id, sent records in order, content fingerprints."""

    def __init__(self, built: BuiltContext, label: str, tools: Any) -> None:
        self.built, self.label, self.tools = built, label, tools
        self.records = {r.id: r for r in built.report.records}
        self.sent = list(built.report.kept)
        self.prints = [m.fingerprint for m in built.messages]
        self.position = {m.id: k for k, m in enumerate(built.messages)}
        self.made_by = {c.new_id: c for c in built.report.compressions}

    def summary(self) -> dict[str, Any]:
        report = self.built.report
        return {"label": self.label, "total_tokens": report.total_tokens, "tool_tokens": report.tool_tokens,
                "messages": len(self.sent), "budget": report.budget}

    def author(self, r: MessageRecord) -> tuple[str | None, str | None]:
        """The step that put ``r`` in the request: the compressing filter for a replacement, else its provider."""
        c = self.made_by.get(r.id)
        if c is not None:
            return c.step_id, c.stage
        return (r.by, r.stage) if r.fate == "added" else (r.source, None)


def _first_difference(a: _Side, b: _Side, k: int) -> dict[str, Any]:
    """Who made position ``k`` differ: the fate in B of A's message there, or the author of B's."""
    ra = a.sent[k] if k < len(a.sent) else None
    rb = b.sent[k] if k < len(b.sent) else None
    out: dict[str, Any] = {"position": k, "a": None if ra is None else _item(ra), "b": None if rb is None else _item(rb)}
    if ra is not None:
        in_b = b.records.get(ra.id)
        if in_b is not None and in_b.fate in ("dropped", "compressed"):
            verb = "compressed" if in_b.fate == "compressed" else "dropped"
            out.update(by=in_b.by, stage=in_b.stage,
                       text=f"{b.label} {verb} message #{k} of {a.label} ({_describe(ra)}) by {in_b.by}"
                            + (f" ({in_b.stage})" if in_b.stage else ""))
            return out
        if in_b is not None and in_b.position is not None and in_b.position == k:
            out.update(by=ra.source, stage=None,
                       text=f"message #{k} ({_describe(ra)}) has the same id in both builds but different content")
            return out
    if rb is not None:
        by, stage = b.author(rb)
        where = f"{by} ({stage})" if stage else f"{by}"
        instead = f" where {a.label} sent its {_describe(ra)}" if ra is not None else f" after the end of {a.label}'s request"
        out.update(by=by, stage=stage, text=f"{b.label} sends {_describe(rb)}, put there by {where},{instead}")
        return out
    assert ra is not None  # k < len(a.sent) or k < len(b.sent)
    in_b = b.records.get(ra.id)
    out.update(by=in_b.by if in_b else None, stage=in_b.stage if in_b else None,
               text=f"{b.label}'s request ends before message #{k} of {a.label} ({_describe(ra)})")
    return out


def _prefix(a: _Side, b: _Side) -> dict[str, Any]:
    tools_same = a.tools == b.tools and a.built.report.tool_tokens == b.built.report.tool_tokens
    k = 0
    if tools_same:
        n = min(len(a.prints), len(b.prints))
        while k < n and a.prints[k] == b.prints[k]:
            k += 1
    common = (a.built.report.tool_tokens if tools_same else 0) + sum(r.tokens or 0 for r in b.sent[:k])
    first: dict[str, Any] | None
    if not tools_same:
        first = {"position": None, "a": None, "b": None, "by": "tools", "stage": None,
                 "text": "the tool schemas differ, so no prefix is shared (providers put the tools first)"}
    elif k == len(a.prints):
        first = None  # B extends A: all of A's request is a reusable prefix
    else:
        first = _first_difference(a, b, k)
    return {"common_messages": k, "common_tokens": common, "tools_same": tools_same, "first_difference": first}


def _changes(a: _Side, b: _Side) -> dict[str, list[dict[str, Any]]]:
    """Entered, left, compressed and changed messages (disjoint lists)."""
    sent_a = {r.id for r in a.sent}
    sent_b = {r.id for r in b.sent}
    changed: list[dict[str, Any]] = []
    for r in a.sent:  # same id in both, different content
        if r.id in sent_b and a.prints[a.position[r.id]] != b.prints[b.position[r.id]]:
            changed.append(_item(r, position_a=a.position[r.id], position_b=b.position[r.id], by=r.source,
                                 tokens_b=b.records[r.id].tokens or 0))
    left: list[dict[str, Any]] = []
    compressed: list[dict[str, Any]] = []
    gone: dict[tuple[str | None, str], list[MessageRecord]] = defaultdict(list)
    for r in a.sent:
        if r.id in sent_b:
            continue
        in_b = b.records.get(r.id)
        if in_b is not None and in_b.fate == "compressed":
            compressed.append(_item(r, position_a=a.position[r.id], by=in_b.by, stage=in_b.stage, into=in_b.into))
        elif in_b is not None and in_b.fate == "dropped":
            left.append(_item(r, position_a=a.position[r.id], by=in_b.by, stage=in_b.stage, fate_in_b="dropped"))
        else:
            gone[(r.source, r.role)].append(r)
    entered: list[dict[str, Any]] = []
    for r in b.sent:
        if r.id in sent_a:
            continue
        by, stage = b.author(r)
        pool = gone.get((r.source, r.role))
        if r.fate == "kept" and pool:  # a provider's message replaced by another of the same source and role
            old = pool.pop(0)
            changed.append(_item(old, position_a=a.position[old.id], position_b=b.position[r.id], by=r.source,
                                 tokens_b=r.tokens or 0, id_b=r.id))
            continue
        entered.append(_item(r, position_b=b.position[r.id], by=by, stage=stage))
    for pool in gone.values():
        for r in pool:  # a filter's message of A (a marker, a compacted result) is not made again; else not provided
            by, stage = a.author(r) if r.fate == "added" else (None, None)
            left.append(_item(r, position_a=a.position[r.id], by=by, stage=stage,
                              fate_in_b="not made again" if r.fate == "added" else "not provided"))
    left.sort(key=lambda i: i["position_a"])
    return {"entered": entered, "left": left, "compressed": compressed, "changed": changed}


def _by_source(a: _Side, b: _Side) -> list[dict[str, Any]]:
    tokens: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for side, k in ((a, 0), (b, 1)):
        for r in side.sent:
            tokens[r.source or ""][k] += r.tokens or 0
        if side.built.report.tool_tokens:
            tokens["tools"][k] += side.built.report.tool_tokens
    return [{"source": s, "a": t[0], "b": t[1], "delta": t[1] - t[0]} for s, t in sorted(tokens.items())]


def diff_builds(
    a: BuiltContext, b: BuiltContext, *, labels: Sequence[str] = ("A", "B"), tools: tuple[Any, Any] = (None, None),
) -> dict[str, Any]:
    """The JSON-ready difference from build ``a`` to build ``b`` (see the module doc).

    Args:
        a: the earlier build (or the first state's).
        b: the later build.
        labels: what to call them in texts ("call 40", "b.json").
        tools: the tool schemas each request carried (compared for the prefix).

    Returns:
        ``a``/``b`` (label, total and tool tokens, messages, budget), ``tokens_delta``,
        ``prefix`` (``common_messages``, ``common_tokens``, ``tools_same``,
        ``first_difference``: ``position``, ``a``, ``b``, ``by``, ``stage``, ``text``, or
        ``None`` when B extends A), ``entered``, ``left``, ``compressed``,
        ``changed``, ``by_source`` (``source``, ``a``, ``b``, ``delta``) and ``explanation``.
    """
    side_a = _Side(a, labels[0], tools[0])
    side_b = _Side(b, labels[1], tools[1])
    prefix = _prefix(side_a, side_b)
    result: dict[str, Any] = {
        "a": side_a.summary(), "b": side_b.summary(),
        "tokens_delta": b.report.total_tokens - a.report.total_tokens,
        "prefix": prefix, **_changes(side_a, side_b), "by_source": _by_source(side_a, side_b),
    }
    result["explanation"] = _explanation(result)
    return result


def _explanation(d: Mapping[str, Any]) -> str:
    p = d["prefix"]
    a, b = d["a"], d["b"]
    first = p["first_difference"]
    share = f"{p['common_tokens']:,} of {b['label']}'s {b['total_tokens']:,} tokens"
    if first is None:
        return (f"{b['label']}'s request starts with all of {a['label']}'s ({p['common_messages']} messages): "
                f"the prompt cache can serve {share}")
    where = "" if first["position"] is None else f" at message #{first['position']}"
    return (f"The prefix breaks{where}: {first['text']}. The prompt cache can serve the {p['common_messages']} "
            f"message(s) before it ({share})")


def _how(key: str, i: Mapping[str, Any]) -> str:
    """Why an item is in its list, in words: who made, dropped or compressed it."""
    by = (i.get("by") or "?") + (f" ({i['stage']})" if i.get("stage") else "")
    if key == "entered":
        return f"made by {by}" if i.get("stage") or i.get("by") != i.get("source") else f"from {by}"
    if key == "left":
        return {"dropped": f"dropped by {by}", "not made again": f"made by {by}, not made again"}.get(
            i.get("fate_in_b", ""), "no longer provided")
    if key == "compressed":
        return f"compressed by {by}"
    return f"content changed, {i['tokens']:,} -> {i['tokens_b']:,} tokens"


def _line(key: str, mark: str, i: Mapping[str, Any], position_key: str) -> str:
    return (f"  {mark} #{i.get(position_key)} {i['role']} {i['source'] or '-'} {i['tokens']:,} tokens, "
            f"{_how(key, i)}: {i['preview']}")


def format_diff(d: Mapping[str, Any]) -> list[str]:
    """The diff as plain text lines (what ``ctx diff`` prints)."""
    a, b, p = d["a"], d["b"], d["prefix"]
    lines = [
        f"diff: {a['label']} -> {b['label']}",
        f"request: {a['total_tokens']:,} -> {b['total_tokens']:,} tokens ({d['tokens_delta']:+,}); "
        f"{a['messages']} -> {b['messages']} messages",
        f"prompt cache: identical prefix of {p['common_messages']} message(s), {p['common_tokens']:,} tokens "
        f"(tool schemas {'identical' if p['tools_same'] else 'differ'})",
        d["explanation"] + ".",
    ]
    first = p["first_difference"]
    if first is not None and first.get("by"):
        lines.append(f"first difference made by: {first['by']}" + (f" ({first['stage']})" if first.get("stage") else ""))
    for key, mark, pos in (("entered", "+", "position_b"), ("left", "-", "position_a"),
                           ("compressed", "~", "position_a"), ("changed", "*", "position_a")):
        items = d[key]
        lines.append(f"{key} ({len(items)}):")
        lines.extend(_line(key, mark, i, pos) for i in items)
    width = max([len("source")] + [len(r["source"] or "-") for r in d["by_source"]])
    lines.append("tokens by source:")
    lines.append(f"  {'source':<{width}}  {a['label']:>12}  {b['label']:>12}  {'delta':>8}")
    for r in d["by_source"]:
        lines.append(f"  {r['source'] or '-':<{width}}  {r['a']:>12,}  {r['b']:>12,}  {r['delta']:>+8,}")
    return lines


def diff_replay(
    builder: Any, messages: Sequence[Mapping[str, Any]], *, state: Mapping[str, Any] | None = None,
    runtime: Mapping[str, Any] | None = None, calls: tuple[int, int] | None = None,
) -> tuple[dict[str, Any], BuiltContext]:
    """The diff between two calls of a replay of ``messages`` through ``builder``, and the later call's build.

    The calls are replayed in order with one builder (as ``ctx replay`` does),
    so water marks and the compaction memo behave as in the session.
    ``calls`` are call indexes (``index`` in ``ctx replay --json``); without
    them the pair is the call that sent the most uncached tokens (its input
    minus the prefix shared with the call before) and the call before it:
    the worst prompt-cache miss of the session.

    Raises:
        ValueError: fewer than two calls, or an index out of range.
    """
    from ctxcore.tools.replay import builder_requests, call_points

    points = call_points(messages)
    _check_calls(calls, len(points))
    tools = (state or {}).get("tools")
    call_of = {p.history: p.index for p in points}
    kept: dict[int, BuiltContext] = {}
    best: list[Any] = [None, -1]  # (diff, uncached)
    previous: list[BuiltContext | None] = [None]

    def on_build(history: int, built: BuiltContext) -> None:
        index = call_of[history]
        if calls is not None:
            if index in calls:
                kept[index] = built
            return
        before = previous[0]
        previous[0] = built
        if before is None:
            return
        d = diff_builds(before, built, labels=(f"call {index - 1}", f"call {index}"), tools=(tools, tools))
        uncached = built.report.total_tokens - d["prefix"]["common_tokens"]
        if uncached > best[1]:
            best[0], best[1] = d, uncached
            kept.clear()
            kept[index] = built

    request = builder_requests(builder, messages, state, runtime, on_build=on_build)
    last = max(calls) if calls is not None else len(points) - 1
    for point in points[: last + 1]:
        request(point.history)
    if calls is not None:
        i, j = calls
        d = diff_builds(kept[i], kept[j], labels=(f"call {i}", f"call {j}"), tools=(tools, tools))
        return {**d, "calls": [i, j]}, kept[j]
    (j, built), = kept.items()
    return {**best[0], "calls": [j - 1, j]}, built


def _check_calls(calls: tuple[int, int] | None, count: int) -> None:
    """Raise a ValueError a user can act on unless ``calls`` names two different calls of ``count`` (>= 2)."""
    if count < 2:
        raise ValueError(f"a replay diff needs two model calls; the transcript has {count}")
    if calls is None:
        return
    for i in calls:
        if not 0 <= i < count:
            raise ValueError(f"call {i} does not exist; the transcript has calls 0 to {count - 1}")
    if calls[0] == calls[1]:
        raise ValueError("give two different calls")


def diff_thread(
    builder: Any, store: Any, thread_id: str, *, steps: tuple[int, int] | None = None,
    runtime: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], BuiltContext]:
    """The diff between the requests two saved turns of a :class:`~ctxcore.runtime.threads.Thread` lead to.

    A turn is a saved step of the thread store ``store``: the request of step
    ``s`` is the build over the messages the thread showed at ``s``, its view
    applied (``ctxcore.kit.view_of``: messages a session took back are left
    out), which is what ``Thread.build`` sends right after
    ``pipeline.thread(id, step=s)``.
    ``steps`` default to the last two saved steps, the two consecutive turns
    whose prompt-cache miss a user asks about. Both builds use one builder,
    earlier step first, as the thread's own session would.

    Raises:
        ValueError: the thread has fewer than two saved steps, or a step does not exist.
        CheckpointCorrupt: the stored thread is damaged.
    """
    from ctxcore.runtime.thread_migrate import messages_of

    saved = [r.step for r in store.list_steps(thread_id)]
    if len(saved) < 2:
        raise ValueError(f"thread {thread_id!r} has {len(saved)} saved step(s); a thread diff needs two")
    i, j = steps if steps is not None else saved[-2:]
    for s in (i, j):
        if s not in saved:
            raise ValueError(f"thread {thread_id!r} has no step {s}; its saved steps are {saved}")
    if i == j:
        raise ValueError("give two different steps")
    run = {"thread_id": thread_id, **(runtime or {})}
    built = {s: builder.build({"messages": messages_of(thread_id, s, view_of(store.read(thread_id, s))[0])}, run)
             for s in sorted((i, j))}
    d = diff_builds(built[i], built[j], labels=(f"step {i}", f"step {j}"))
    return {**d, "thread_id": thread_id, "steps": [i, j]}, built[j]
