"""Issue 16's dict-input goals alone (3, 4 and 5), with bench/perf.py's own functions and settings.

Usage: ``.venv/bin/python bench/dict_goals.py [--messages 20000] [--middle 2000] [--cold-reps 3]``.

The full ``bench/perf.py`` takes minutes (every cell, the replay, the peers);
this times only what goals 3–5 compare, the same way (``gc.collect()`` before
each timed build, medians): next turn at the largest and middle size for
``Message`` and dict input, a cold build of each, and LangChain's first
``trim_messages`` call with a fresh memoized counter. Nothing is written.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import perf  # noqa: E402
from langchain_side import MemoizedCl100kCounter  # noqa: E402
from workload import coding_agent_transcript  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--middle", type=int, default=2_000)
    parser.add_argument("--cold-reps", type=int, default=3)
    args = parser.parse_args()
    config = perf.Config()
    big, middle, budget = args.messages, args.middle, config.budgets[0]
    transcripts = {n: coding_agent_transcript(n, config.seed) for n in (middle, big)}
    extra = perf.growth(config.reps + 1, config.seed)
    encoding = perf.encoding_of(perf.make_pipeline(budget).builder().counter)
    median = statistics.median
    next_turn = {}
    for form in perf.FORMS:
        for n in (middle, big):
            times, built, _, _ = perf.ctxcore_next_turn(transcripts[n], extra[:config.reps], budget, form)
            perf.check_ctxcore_output(built, encoding, budget)
            next_turn[(form, n)] = median(times)
    cold = {form: median(perf.ctxcore_cold(transcripts[big], args.cold_reps, budget, form)[0]) for form in perf.FORMS}
    langchain = []
    for _ in range(args.cold_reps):
        elapsed, _kept = perf._timed(perf.trim, perf.to_langchain(transcripts[big], perf.SYSTEM_PROMPT), budget,
                                     MemoizedCl100kCounter(encoding))
        langchain.append(elapsed)
    lc = median(langchain)

    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.2f} ms"

    d, m = next_turn[("dict", big)], next_turn[("Message", big)]
    print(f"goal 3, next turn at {big:,}: dict {ms(d)} / Message {ms(m)} = {d / m:.2f}x (goal <= 1.3)")
    print(f"goal 3, cold at {big:,}: dict {ms(cold['dict'])} / Message {ms(cold['Message'])} = "
          f"{cold['dict'] / cold['Message']:.2f}x (goal <= 1.3)")
    mid = next_turn[("dict", middle)]
    print(f"goal 4, dict next turn {big:,} / {middle:,}: {ms(d)} / {ms(mid)} = {d / mid:.2f}x (goal <= 1.3)")
    print(f"goal 5, cold at {big:,}: LangChain memoized {ms(lc)} / ctxcore dict {ms(cold['dict'])} = "
          f"{lc / cold['dict']:.1f}x (goal >= 30)")


if __name__ == "__main__":
    main()
