"""Speed of the ``approximate`` counter against exact tiktoken on 1 MB of mixed text.

Usage: ``.venv/bin/python bench/counter_speed.py [--per-corpus]`` (docs/counters.md quotes it);
``--per-corpus`` also times each corpus's 200,000 characters on their own.

The text is the five accuracy corpora (bench/counter_corpora.py: English and
Chinese prose, mixed Chinese/English technical text, Python source, JSON), each
repeated to 200,000 characters, counted the way a build counts: as messages of
2,000 characters, one ``count_text`` call each, on both sides. Times are the
best of :data:`ROUNDS` CPU-time (``time.process_time``) runs, the two sides
taking turns so a change in the shared machine's load hits both alike.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from counter_corpora import load_corpus  # noqa: E402
from ctxcore_counters import ApproximateCounter, TiktokenCounter  # noqa: E402

SHARE, CHUNK = 200_000, 2_000
CORPORA = ("english", "chinese", "mixed", "python", "json")  # one of each kind of text, JSON once
# Rounds of the timing (about 0.25 s each): a burst of load on a shared machine can cover all of a short
# measurement; 15 rounds span ~4 s.
ROUNDS = 15


def shares() -> dict[str, str]:
    """Each corpus repeated to 200,000 characters."""
    corpora = {name: load_corpus(name) for name in CORPORA}
    return {name: (corpora[name] * (SHARE // len(corpora[name]) + 1))[:SHARE] for name in CORPORA}


def messages(text: str) -> list[str]:
    """``text`` as 2,000-character messages."""
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]


def mixed_megabyte() -> list[str]:
    """1 MB of the five corpora in equal shares, as 2,000-character messages."""
    return messages("".join(shares().values()))


def best_of(call: Callable[[], object], runs: int = 5) -> float:
    """The smallest CPU time of ``runs`` calls, in seconds."""
    return min(best_in_turns([call], runs))


def best_in_turns(calls: list[Callable[[], object]], runs: int = ROUNDS) -> list[float]:
    """The smallest CPU time of each call over ``runs`` rounds in which every call runs once, in seconds."""
    best = [float("inf")] * len(calls)
    for _ in range(runs):
        for i, call in enumerate(calls):
            started = time.process_time()
            call()
            best[i] = min(best[i], time.process_time() - started)
    return best


def measure(texts: list[str] | None = None) -> dict[str, float]:
    """Seconds for tiktoken cl100k_base and approximate:cl100k over ``texts`` (the mixed megabyte), and their ratio."""
    texts = mixed_megabyte() if texts is None else texts
    exact, approx = TiktokenCounter("cl100k_base"), ApproximateCounter("cl100k")
    approx.count_text("中文")  # builds the per-code-point tables once, outside the timing
    tiktoken_s, approximate_s = best_in_turns([lambda: [exact.count_text(t) for t in texts],
                                               lambda: [approx.count_text(t) for t in texts]])
    return {"tiktoken_s": tiktoken_s, "approximate_s": approximate_s, "speedup": tiktoken_s / approximate_s}


def line(label: str, result: dict[str, float]) -> str:
    """One result as a line of text."""
    return (f"{label}: tiktoken {result['tiktoken_s'] * 1e3:.1f} ms, approximate {result['approximate_s'] * 1e3:.1f} ms: "
            f"approximate is {result['speedup']:.2f}x faster")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-corpus", action="store_true", help="also time each corpus's share on its own")
    args = parser.parse_args()
    print(line("1 MB mixed", measure()))
    if args.per_corpus:
        for name, text in shares().items():
            print(line(f"  {name}", measure(messages(text))))
