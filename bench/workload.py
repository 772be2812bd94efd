"""A deterministic coding-agent transcript: the workload every benchmark shares.

``coding_agent_transcript(n, seed)`` returns exactly ``n`` OpenAI-format message
dicts shaped like a coding agent's session: a user request, then zero to three
rounds of assistant tool calls (1-3 parallel calls, each answered by a tool
result) and a final assistant answer. Tool results are slices of real source
files from the running Python's standard library (200-6000 characters, the size
of a ``read_file`` or ``grep`` result); prose is built from the words of those
files' comments and docstrings, so token densities look like a real session.

The same ``(n, seed)`` on the same Python gives the same transcript, and the
transcript is always a legal history: every tool call is answered, and a cut
never falls inside a tool transaction.

``as_messages`` turns the dicts into ctxcore Messages with stable ids
(``m0``, ``m1``...), constructed once outside any timed build, the way a
LangChain benchmark constructs its ``BaseMessage`` objects up front.
"""

from __future__ import annotations

import json
import random
import re
import sysconfig
from functools import lru_cache
from pathlib import Path
from typing import Any

from ctxcore.model.messages import Message

__all__ = ["coding_agent_transcript", "as_messages", "source_files"]

TOOLS = ("read_file", "grep", "run_tests", "list_dir")
MIN_RESULT, MAX_RESULT = 200, 6000
_WORD = re.compile(r"[A-Za-z][A-Za-z']{2,}")
_REQUESTS = (
    "Please look at {path} and explain what {name} does.",
    "The tests around {name} fail on CI, can you find out why? Start with {path}.",
    "Refactor {name} in {path} so it is easier to test.",
    "Is {name} in {path} thread-safe? Check the callers too.",
    "Add type hints to {name} ({path}) and keep the behaviour unchanged.",
)


@lru_cache(maxsize=1)
def source_files() -> tuple[tuple[str, str], ...]:
    """(relative path, text) of the standard library's top-level modules, sorted by path."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for path in sorted(root.glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if len(text) >= MAX_RESULT:
            files.append((f"lib/{path.name}", text))
    if not files:
        raise RuntimeError(f"no readable standard-library sources under {root}; the workload needs them")
    return tuple(files)


@lru_cache(maxsize=1)
def _vocabulary() -> tuple[str, ...]:
    """Words from the comments and docstrings of the source files (prose for chat turns)."""
    words: list[str] = []
    for _, text in source_files()[:40]:
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith("#") or (stripped and not stripped.endswith((":", ")", "]", "}", ","))):
                words.extend(_WORD.findall(stripped.lstrip("#")))
    return tuple(words)


def _prose(rng: random.Random, low: int, high: int) -> str:
    """A few sentences of programmer prose, ``low``-``high`` characters long."""
    vocab = _vocabulary()
    target = rng.randint(low, high)
    sentences: list[str] = []
    size = 0
    while size < target:
        words = [rng.choice(vocab) for _ in range(rng.randint(6, 18))]
        sentence = " ".join(words).capitalize() + "."
        sentences.append(sentence)
        size += len(sentence) + 1
    return " ".join(sentences)


def _slice(rng: random.Random) -> tuple[str, str]:
    path, text = rng.choice(source_files())
    size = rng.randint(MIN_RESULT, MAX_RESULT)
    start = rng.randint(0, len(text) - size)
    return path, text[start:start + size]


def coding_agent_transcript(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """Exactly ``n`` OpenAI-format messages of a coding-agent session (see the module doc)."""
    if n < 0:
        raise ValueError("n must be >= 0")
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    call_no = 0
    while len(out) < n:
        path, _ = rng.choice(source_files())
        name = rng.choice(_vocabulary())
        out.append({"role": "user", "content": rng.choice(_REQUESTS).format(path=path, name=name)})
        for _ in range(rng.randint(0, 3)):
            width = rng.randint(1, 3)
            if n - len(out) < width + 2:  # the unit plus a final answer must fit
                break
            calls, results = [], []
            for _ in range(width):
                call_no += 1
                tool = rng.choice(TOOLS)
                path, text = _slice(rng)
                call_id = f"call_{call_no:06d}"
                arguments = {"path": path} if tool != "grep" else {"pattern": rng.choice(_vocabulary()), "path": path}
                calls.append({"id": call_id, "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments)}})
                results.append({"role": "tool", "tool_call_id": call_id, "content": text})
            thought = _prose(rng, 0, 300) or None
            out.append({"role": "assistant", "content": thought, "tool_calls": calls})
            out.extend(results)
        if len(out) < n:
            out.append({"role": "assistant", "content": _prose(rng, 200, 1500)})
    return out[:n]


def as_messages(dicts: list[dict[str, Any]]) -> list[Message]:
    """ctxcore Messages for ``dicts`` with stable ids ``m0``, ``m1``..."""
    return [Message.from_openai(d, id=f"m{i}") for i, d in enumerate(dicts)]
