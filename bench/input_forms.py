"""Cold and next-turn build times of one history in each input form the history provider reads.

The same coding-agent transcript (bench/workload.py) is stored four ways:
OpenAI chat dicts (``chat``), Anthropic message dicts (``anthropic``, as
:func:`ctxcore.render.to_anthropic` writes them), OpenAI Responses input items
(``responses``, as :func:`ctxcore.render.to_openai_responses` writes them) and
chat dicts whose user content is a list of text parts (``parts``). For each,
the pipeline of bench/perf.py builds it cold (a fresh pipeline, a fresh copy
of the items: the median of ``--cold`` runs) and then once per appended user
message (the median of ``--turns`` next-turn builds). A cold build's
cost should follow what is new and kept for every form; this prints
how far each form is from the chat form.

Run from the repository root: ``python bench/input_forms.py 20000``.
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf  # noqa: E402
from workload import coding_agent_transcript  # noqa: E402

from ctxcore.model.messages import Message  # noqa: E402
from ctxcore.render.anthropic import to_anthropic  # noqa: E402
from ctxcore.render.openai_responses import to_openai_responses  # noqa: E402


def forms(size: int, seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """The transcript of ``size`` chat messages in each input form, by name."""
    dicts = coding_agent_transcript(size, seed)
    messages = [Message.from_openai(d) for d in dicts]
    parts = [dict(d, content=[{"type": "text", "text": d["content"]}]) if isinstance(d.get("content"), str) and d["role"] == "user" else d
             for d in dicts]
    return {"chat": dicts, "anthropic": to_anthropic(messages)["messages"],
            "responses": to_openai_responses(messages)["input"], "parts": parts}


def _timed_build(pipeline: Any, state: dict[str, Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    pipeline.build(state)
    return time.perf_counter() - start


def measure(items: list[dict[str, Any]], cold: int, turns: int, budget: int) -> tuple[float, float]:
    """Median cold and next-turn build times (seconds) of one form's items."""
    cold_times = []
    for _ in range(cold):
        pipeline, state = perf.make_pipeline(budget), {"messages": copy.deepcopy(items)}
        cold_times.append(_timed_build(pipeline, state))
    turn_times = []
    for extra in perf.growth(turns, 0):
        state["messages"].append({"role": "user", "content": extra["content"]})
        turn_times.append(_timed_build(pipeline, state))
    return statistics.median(cold_times), statistics.median(turn_times)


def main(argv: list[str] | None = None) -> dict[str, tuple[int, float, float]]:
    """Print one line per form (items, cold ms, next-turn ms) and return the same numbers by form."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", type=int, default=20000, help="chat messages in the transcript (default 20000)")
    parser.add_argument("--cold", type=int, default=3, help="cold builds per form (default 3)")
    parser.add_argument("--turns", type=int, default=6, help="next-turn builds per form (default 6)")
    parser.add_argument("--budget", type=int, default=8000, help="the pipeline's token budget (default 8000)")
    parser.add_argument("--forms", nargs="*", default=None, help="only these forms (chat, anthropic, responses, parts)")
    args = parser.parse_args(argv)
    out = {}
    for name, items in forms(args.size).items():
        if args.forms and name not in args.forms:
            continue
        cold, turn = measure(items, args.cold, args.turns, args.budget)
        out[name] = (len(items), cold * 1000, turn * 1000)
        print(f"{name:10s} items {len(items):6d} cold {cold * 1000:8.1f} ms  next turn {turn * 1000:.2f} ms")
    return out


if __name__ == "__main__":
    main()
