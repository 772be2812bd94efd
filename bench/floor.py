"""The least any build could do for goals 1 and 3, timed the way bench/perf.py times ctxcore.

Usage: ``.venv/bin/python bench/floor.py [--messages 200] [--budgets 8000,128000] [--forms dict,Message]
[--reps 9] [--cold 20000]`` (about a minute; nothing is written).

Goal 1 asks ctxcore's next turn to be twice as fast as LangChain's memoized
``trim_messages`` in every cell, and at 200 messages it is not. To know
whether *any* build could be, this times a **floor**: :class:`FloorBuilder`,
the minimum a next turn must do, with none of ctxcore's guarantees. It keeps
the last window and the count of each of its messages; a next turn converts
each new item (``Message.from_openai`` for a dict, with its position as
its id: the cheapest exact conversion ctxcore has), counts it once with the pipeline's own cached exact
counter, appends it, and drops the oldest messages after the system prompt
until the window fits and starts on a user message (cutting before a user
message never separates a tool call from its results). No guard against
edited history, no marker neutralisation, no request check, no report, no
priorities, no plugin hooks. Each cell is timed as bench/perf.py times
ctxcore (``gc.collect()`` before each build, medians), in the same process as
LangChain memoized and ctxcore, and every window is checked within the budget
by the independent count. If LangChain / floor is under 2 in a cell, no build
of that cell can meet goal 1 there; ctxcore's own ratio shows how far it is.

``--cold N`` prints goal 3's floor the same way. Goal 3 compares a cold build
of N dicts with one of N ``Message`` objects (made before the timing). The
dict build's own extra is the history provider's conversion of every dict
(``History._update``, timed inside the cold dict builds); the rest of the dict
build is the same engine work on the provider's stand-ins. The least that
conversion could cost is one pass over the N dicts that reads the fields the
engine's walks need (role, content, tool call ids, the call a result
answers), checks their types and makes one small tuple per dict
(:func:`plain_pass`: no unknown-key check, no check of a call's fields, no
object a walk could read, no collection). So the best dict build is the
measured dict build minus its conversion plus that pass, and its ratio to
the ``Message`` build is the best goal-3 ratio a build checking every dict
when first seen could reach.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf  # noqa: E402
from ctxcore_providers.history import History  # noqa: E402
from langchain_side import MemoizedCl100kCounter  # noqa: E402
from workload import coding_agent_transcript  # noqa: E402

from ctxcore.engine.budget import CachedCounter  # noqa: E402
from ctxcore.model.messages import Message  # noqa: E402


class FloorBuilder:
    """The minimum of a next turn: convert and count what is new, append it, evict the oldest (see the module docstring)."""

    def __init__(self, system_prompt: str, budget: int, counter: CachedCounter) -> None:
        self.budget, self.counter = budget, counter
        system = Message(role="system", content=system_prompt, id="system")
        self.system = system
        self.window: list[Message] = []
        self.counts: list[int] = []
        self.total = counter.priming + counter.count_message(system)
        self.seen = 0

    def build(self, history: Sequence[Any]) -> list[Message]:
        """The window after ``history`` grew (items before the last build's length are taken as unchanged)."""
        count = self.counter.count_message
        window, counts = self.window, self.counts
        for index in range(self.seen, len(history)):
            item = history[index]
            m = Message.from_openai(item, id=str(index)) if type(item) is dict else item
            c = count(m)
            window.append(m)
            counts.append(c)
            self.total += c
        self.seen = len(history)
        cut = 0
        total = self.total
        while cut < len(window) and (total > self.budget or window[cut].role != "user"):
            total -= counts[cut]
            cut += 1
        if cut:
            del window[:cut]
            del counts[:cut]
            self.total = total
        return [self.system, *window]


def floor_next_turn(dicts: list[dict[str, Any]], extra: list[dict[str, Any]], budget: int, form: str,
                    counter: CachedCounter) -> tuple[list[float], list[Message]]:
    """Times of floor next turns, each after a build of the history minus its newest message (as ctxcore's)."""
    builder = FloorBuilder(perf.SYSTEM_PROMPT, budget, counter)
    history = perf.history_of(dicts, form)
    window = builder.build(history)
    times = []
    for i, d in enumerate(extra):
        history.append(perf.item_of(d, form, i))
        elapsed, window = perf._timed(builder.build, history)
        times.append(elapsed)
    return times, window


def check_floor_window(window: list[Message], encoding: Any, budget: int) -> int:
    """Within the budget by the independent count, the system prompt then a user message; its token count."""
    tokens = perf.independent_count(window, encoding)
    if tokens > budget or window[0].role != "system" or len(window) < 2 or window[1].role != "user":
        raise perf.HarnessError(f"the floor's window is wrong: {tokens} tokens for a {budget} budget, "
                                f"starts {[m.role for m in window[:2]]}")
    return tokens


def plain_pass(dicts: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The least a dict build adds to a Message build: the walks' fields of each dict read, type-checked, kept."""
    roles = {"system", "user", "assistant", "tool"}
    out: list[tuple[Any, ...]] = []
    append = out.append
    for d in dicts:
        if type(d) is not dict:
            raise TypeError("not a dict")
        role, content = d.get("role"), d.get("content")
        if role not in roles or (content is not None and type(content) is not str):
            raise TypeError("not a plain chat dict")
        calls = d.get("tool_calls")
        append((role, d.get("tool_call_id"), tuple([c["id"] for c in calls]) if calls else ()))
    return out


def timed_pass(dicts: Sequence[Any], pause_gc: bool) -> float:
    """One :func:`plain_pass` after a collection, the collector paused as the history provider pauses it."""
    gc.collect()
    if pause_gc:
        gc.disable()
    try:
        started = time.perf_counter()
        plain_pass(dicts)
        return time.perf_counter() - started
    finally:
        gc.enable()


def cold_dict_build(dicts: list[dict[str, Any]], reps: int, budget: int) -> tuple[float, float]:
    """Medians of cold dict builds and of the history provider's conversion inside them (``History._update``)."""
    spent: list[float] = []
    original = History._update

    def timed_update(self: History, items: Sequence[Any]) -> bool:
        started = time.perf_counter()
        try:
            return original(self, items)
        finally:
            spent.append(time.perf_counter() - started)

    History._update = timed_update  # type: ignore[method-assign]
    try:
        builds, conversions = [], []
        for _ in range(reps):
            spent.clear()
            builds.append(perf.ctxcore_cold(dicts, 1, budget, "dict")[0][0])
            conversions.append(sum(spent))
    finally:
        History._update = original  # type: ignore[method-assign]
    return statistics.median(builds), statistics.median(conversions)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--budgets", default="8000,128000")
    parser.add_argument("--forms", default="dict,Message")
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--cold", type=int, default=0, help="also goal 3's floor at this many messages")
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    forms = args.forms.split(",")
    dicts = coding_agent_transcript(args.messages, seed=0)
    extra = perf.growth(args.reps, 0)
    encoding = perf.encoding_of(perf.make_pipeline(budgets[0]).builder().counter)
    perf.warm_up(encoding)
    median = statistics.median
    print(f"goal 1's floor at {args.messages} messages (medians of {args.reps} next turns, each after gc.collect(); "
          f"load average {perf.machine_info()['load_average']}):")
    print(f"{'budget':>8} {'input':8} {'floor':>9} {'ctxcore':>9} {'LangChain':>10} {'LC/floor':>9} {'LC/ctxcore':>11} "
          f"{'windows (floor / ctxcore / LC)':>31}")
    for budget in budgets:
        lc_times, kept = perf.langchain_next_turn(dicts, extra, budget, MemoizedCl100kCounter(encoding))
        lc = median(lc_times)
        for form in forms:
            counter = perf.make_pipeline(budget).builder().counter
            floor_times, window = floor_next_turn(dicts, extra, budget, form, counter)
            check_floor_window(window, encoding, budget)
            ours_times, built, _, _ = perf.ctxcore_next_turn(dicts, extra, budget, form)
            perf.check_ctxcore_output(built, encoding, budget)
            floor, ours = median(floor_times), median(ours_times)
            print(f"{budget:>8,} {form:8} {floor * 1e3:>7.3f}ms {ours * 1e3:>7.3f}ms {lc * 1e3:>8.3f}ms "
                  f"{lc / floor:>8.2f}x {lc / ours:>10.2f}x {len(window):>13} / {len(built.messages)} / {len(kept)}")
    if args.cold:
        big = coding_agent_transcript(args.cold, seed=0)
        cold_message = median(perf.ctxcore_cold(big, 5, budgets[0], "Message")[0])
        cold_dict, conversion = cold_dict_build(big, 5, budgets[0])
        copies = [dict(d) for d in big]
        passed = median([timed_pass(copies, pause_gc=True) for _ in range(args.reps)])
        best = cold_dict - conversion + passed
        print(f"goal 3's floor at {args.cold:,} messages, cold (medians of 5): Message build {cold_message * 1e3:.2f} ms; "
              f"dict build {cold_dict * 1e3:.2f} ms = {cold_dict / cold_message:.2f}x (goal <= 1.3), of which converting "
              f"the dicts {conversion * 1e3:.2f} ms; the least pass {passed * 1e3:.2f} ms; so at best "
              f"{best * 1e3:.2f} ms = {best / cold_message:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
