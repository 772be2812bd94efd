"""Fit the ``approximate`` counter's rates against the real tokenizers.

Usage: ``.venv/bin/python bench/calibrate_approximate.py [--margin 1.035] [--json-weight 3] [--write-cjk]``

Splits each corpus (bench/counter_corpora.py) into chunks of about 800
characters, measures each chunk's features and its real token count for
cl100k_base and o200k_base, and fits non-negative rates minimising the relative
squared error, every corpus weighted equally except the JSON ones, which share
``--json-weight`` corpora's worth (eight JSON shapes would otherwise outvote
prose and code). The held-out corpora are never loaded here. The fitted rates are multiplied by
``--margin`` so the estimate errs on the high side, then printed as the
``RATES`` literal to paste into ctxcore_counters/approximate.py, followed by the
whole-corpus errors they give. Features the corpora do not exercise (kana,
hangul, other alphabets, symbols, emoji), the near-exact ones (digit groups,
line breaks, punctuation runs, space pieces, CJK punctuation) and the rate of
letters past the fifth keep their current, hand-set rates. ``--write-cjk`` first
regenerates ctxcore_counters/_cjk_common.py (the CJK ideographs that are one
cl100k_base token).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from counter_corpora import load_corpora  # noqa: E402
from ctxcore_counters.approximate import FEATURES, RATES, Rates, estimate, features  # noqa: E402
from ctxcore_counters.tiktoken_counter import TiktokenCounter  # noqa: E402

FAMILIES = {"cl100k": "cl100k_base", "o200k": "o200k_base"}
# Hand-set: rates the corpora do not exercise, the near-exact ones (a punctuation run, a space piece, a digit
# group, a line-break group is one token), and extra_letters (left free, the fit trades it against the part rate
# and can drive it to 0, pricing any long word at one token).
FIXED = {"extra_letters", "punct_runs", "indents", "letters", "kana", "hangul", "digit_groups", "cjk_punct", "newlines", "symbols", "emoji"}


def chunks(text: str, size: int = 800) -> list[str]:
    """Pieces of about ``size`` characters, cut at line ends."""
    out, current = [], ""
    for line in text.splitlines(keepends=True):
        current += line
        if len(current) >= size:
            out.append(current)
            current = ""
    if current.strip():
        out.append(current)
    return out


def fit(rows: list[tuple[list[float], float, float]], start: list[float], free: list[int], sweeps: int = 400) -> list[float]:
    """Non-negative weighted least squares by coordinate descent: rows are (x, y, weight)."""
    b = list(start)
    resid = [y - sum(xi * bi for xi, bi in zip(x, b, strict=True)) for x, y, _ in rows]
    for _ in range(sweeps):
        for j in free:
            num = sum(w * x[j] * r for (x, _, w), r in zip(rows, resid, strict=True))
            den = sum(w * x[j] * x[j] for x, _, w in rows)
            if den == 0:
                continue
            new = max(0.0, b[j] + num / den)
            delta = new - b[j]
            if delta:
                resid = [r - delta * x[j] for (x, _, _), r in zip(rows, resid, strict=True)]
                b[j] = new
    return b


def weight(name: str, corpora: dict[str, str], json_weight: float) -> float:
    """A corpus's share of the fit: 1 each, the JSON ones sharing ``json_weight`` so their number does not outvote prose and code."""
    if not name.startswith("json"):
        return 1.0
    return json_weight / sum(n.startswith("json") for n in corpora)


CJK_BLOCKS = ((0x3400, 0x4DC0), (0x4E00, 0xA000), (0xF900, 0xFB00))
CJK_MODULE = Path(__file__).resolve().parents[1] / "plugins/counters/ctxcore-counters/ctxcore_counters/_cjk_common.py"


def write_cjk() -> None:
    """Regenerate the list of CJK ideographs that are a single cl100k_base token."""
    counter = TiktokenCounter("cl100k_base")
    chars = "".join(chr(c) for lo, hi in CJK_BLOCKS for c in range(lo, hi) if counter.count_text(chr(c)) == 1)
    head, _, _ = CJK_MODULE.read_text(encoding="utf-8").partition("COMMON_CJK = ")
    body = "\n".join(f'    "{chars[i:i + 60]}"' for i in range(0, len(chars), 60))
    CJK_MODULE.write_text(f"{head}COMMON_CJK = frozenset(\n{body}\n)\n", encoding="utf-8")
    print(f"wrote {len(chars)} characters to {CJK_MODULE}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--margin", type=float, default=1.035, help="multiply fitted rates by this (over-count a little)")
    parser.add_argument("--json-weight", type=float, default=3.0, help="the JSON corpora's share of the fit, in corpora")
    parser.add_argument("--write-cjk", action="store_true", help="regenerate the common-CJK list first")
    args = parser.parse_args()
    if args.write_cjk:
        write_cjk()
    corpora = load_corpora()
    free = [i for i, name in enumerate(FEATURES) if name not in FIXED]
    for family, encoding in FAMILIES.items():
        counter = TiktokenCounter(encoding)
        rows = []
        for name, text in corpora.items():
            pieces = chunks(text)
            share = weight(name, corpora, args.json_weight)
            for piece in pieces:
                y = counter.count_text(piece)
                if y:
                    rows.append((features(piece), float(y), share / (y * y * len(pieces))))
        fitted = fit(rows, list(RATES[family].values), free)
        rates = tuple(round(v * (args.margin if i in free else 1.0), 4) for i, v in enumerate(fitted))
        print(f'    "{family}": Rates({rates!r}),')
        for name, text in corpora.items():
            real = counter.count_text(text)
            est = estimate(text, Rates(rates))
            print(f"      {name:8} real {real:7} est {est:7} err {100 * (est - real) / real:+6.1f}%")


if __name__ == "__main__":
    main()
