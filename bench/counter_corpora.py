"""The corpora the ``approximate`` counter is calibrated and checked on.

- english: English prose shipped in bench/corpora (public-domain passages and
  prose written for this repository);
- chinese: modern Chinese prose shipped in bench/corpora (written for it);
- mixed: a Chinese technical guide with English terms, commands and YAML;
- python: real Python source, a fixed list of modules of the running
  interpreter's standard library (nothing to ship);
- json: JSON generated deterministically (seeded): API-style records with hex
  ids, timestamps, numbers, nested objects, both indented and compact;
- eight more JSON shapes (``json_*``) and three held-out ones (``heldout_*``,
  measured but never fitted on), generated in bench/json_corpora.py.
"""

from __future__ import annotations

import json
import random
import sysconfig
from pathlib import Path

from json_corpora import FITTED, HELD_OUT, json_corpus

__all__ = ["CORPORA", "HELD_OUT", "load_corpus", "load_corpora"]

HERE = Path(__file__).resolve().parent / "corpora"
CORPORA = ("english", "chinese", "mixed", "python", "json", *FITTED)  # the rates are fitted on these
PYTHON_MODULES = (
    "textwrap.py", "shlex.py", "heapq.py", "fractions.py", "json/__init__.py", "json/encoder.py",
    "json/decoder.py", "string.py", "dataclasses.py", "contextlib.py",
)
_FILES = {"english": "english_prose.txt", "chinese": "chinese_prose.txt", "mixed": "mixed_technical.txt"}
_WORDS = (
    "alpha bravo charlie delta echo foxtrot river stone cloud garden window market station ticket "
    "invoice customer order shipment pending active archived premium basic refund review draft "
    "published warning error success timeout retry latency region cluster replica primary"
).split()


def _python_source() -> str:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return "\n".join((stdlib / name).read_text(encoding="utf-8") for name in PYTHON_MODULES)


def _record(rng: random.Random, i: int) -> dict:
    words = lambda n: " ".join(rng.choice(_WORDS) for _ in range(n))  # noqa: E731
    return {
        "id": f"{rng.getrandbits(128):032x}",
        "index": i,
        "created_at": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z",
        "status": rng.choice(["pending", "active", "archived", "failed"]),
        "customer": {
            "name": f"{rng.choice(_WORDS).title()} {rng.choice(_WORDS).title()}",
            "email": f"{rng.choice(_WORDS)}.{rng.choice(_WORDS)}{rng.randint(1, 99)}@example.com",
            "tier": rng.choice(["premium", "basic"]),
        },
        "amount": round(rng.uniform(1, 5000), 2),
        "currency": rng.choice(["USD", "EUR", "CNY"]),
        "items": [
            {"sku": f"SKU-{rng.randint(10000, 99999)}", "quantity": rng.randint(1, 9), "price": round(rng.uniform(1, 300), 2)}
            for _ in range(rng.randint(1, 3))
        ],
        "tags": rng.sample(_WORDS, 3),
        "verified": rng.random() < 0.5,
        "notes": words(rng.randint(4, 12)).capitalize() + ".",
    }


def _json_text() -> str:
    rng = random.Random(5)
    records = [_record(rng, i) for i in range(60)]
    indented = json.dumps({"data": records[:40], "has_more": True, "next_cursor": f"{rng.getrandbits(96):024x}"}, indent=2)
    compact = "\n".join(json.dumps(r, separators=(",", ":")) for r in records[40:])
    return indented + "\n" + compact + "\n"


def load_corpus(name: str) -> str:
    """The text of corpus ``name`` (one of :data:`CORPORA` or :data:`HELD_OUT`)."""
    if name in _FILES:
        return (HERE / _FILES[name]).read_text(encoding="utf-8")
    if name == "python":
        return _python_source()
    if name == "json":
        return _json_text()
    if name in FITTED or name in HELD_OUT:
        return json_corpus(name)
    raise KeyError(f"unknown corpus {name!r}; choose from {', '.join(CORPORA + HELD_OUT)}")


def load_corpora(*, held_out: bool = False) -> dict[str, str]:
    """Every fitted corpus by name, then the held-out ones when ``held_out``."""
    return {name: load_corpus(name) for name in CORPORA + (HELD_OUT if held_out else ())}
