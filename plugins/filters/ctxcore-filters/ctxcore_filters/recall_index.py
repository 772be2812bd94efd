"""An incremental BM25 index over one conversation's messages, with optional embeddings for hybrid ranking.

Invariant: after ``index.sync(messages)`` the index equals a fresh
``RecallIndex().sync(messages)`` (the same documents, units, postings and
lengths), whatever syncs came before. A sync keeps the longest prefix it
indexed whose messages are the very same objects and re-indexes from the first
change, so a next turn tokenizes only the new messages, and an edited or
truncated history is indexed again from the edit. Why: a thread of 20,000
messages must not be re-tokenized on every build.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from operator import is_
from typing import Protocol, runtime_checkable

from ctxcore import Message

__all__ = ["Embedder", "RecallIndex", "Scored", "message_text", "terms"]

_WORD = re.compile(r"\w+")
# English function words: they match everything and carry no topic.
_STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
    off on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves""".split()
)


@runtime_checkable
class Embedder(Protocol):
    """A user-supplied embedding function: one vector per text, all of one length.

    ctxcore ships none and downloads nothing; pass any callable (a
    sentence-transformers model's ``encode``, an API client) that maps a list
    of strings to a list of float vectors.
    """

    def __call__(self, texts: Sequence[str]) -> Sequence[Sequence[float]]: ...


def _stem(word: str) -> str:
    """A light plural fold (``cities`` -> ``city``, ``cats`` -> ``cat``): enough for BM25 without a stemmer library."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The BM25 terms of ``text``: lower-cased words, function words and one-letter words left out, plurals folded."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in _STOPWORDS]


def message_text(m: Message) -> str:
    """What is indexed and recalled of a message: its text, and its tool calls as ``name(arguments)``."""
    calls = " ".join(f"{c.name}({c.arguments})" for c in m.tool_calls)
    return f"{m.text} {calls}" if calls else m.text


class Scored:
    """One document's relevance: its total, its BM25 part, the query terms it matched, its cosine (hybrid)."""

    __slots__ = ("doc", "score", "bm25", "matched", "cosine")

    def __init__(self, doc: int, score: float, bm25: float, matched: tuple[str, ...], cosine: float | None) -> None:
        self.doc, self.score, self.bm25, self.matched, self.cosine = doc, score, bm25, matched, cosine

    def why(self) -> str:
        """The reason in words: the BM25 score and the terms it matched, and the cosine when embeddings rank too."""
        text = f"bm25 {self.bm25:.2f} on {', '.join(repr(t) for t in self.matched)}" if self.matched else "no shared terms"
        return text if self.cosine is None else f"{text}; cosine {self.cosine:.2f}"


class RecallIndex:
    """BM25 (k1, b) over messages, kept incrementally; each message also knows its unit (tool pairs whole).

    A message's unit is the index of the unit's first message: a tool result
    joins the unit of the assistant call (or tool result) right before it, as
    :func:`ctxcore.group_units` groups a sanitized history.
    """

    def __init__(self, embedder: Embedder | None = None, k1: float = 1.2, b: float = 0.75) -> None:
        self.embedder = embedder
        self.k1, self.b = k1, b
        self.messages: list[Message] = []
        self.units: list[int] = []
        self.tfs: list[Counter[str]] = []
        self.lengths: list[int] = []
        self.postings: dict[str, dict[int, int]] = {}
        self.total_length = 0
        self.vectors: list[tuple[float, ...]] = []

    def sync(self, messages: Sequence[Message]) -> int:
        """Make the index hold exactly ``messages``; return how many leading documents were kept as they were."""
        keep = _common_prefix(self.messages, messages)
        self._truncate(keep)
        self._extend(messages[keep:] if keep else messages)
        return keep

    def _truncate(self, keep: int) -> None:
        for doc in range(keep, len(self.messages)):
            tf = self.tfs[doc]
            for term in tf:
                posting = self.postings[term]
                del posting[doc]
                if not posting:
                    del self.postings[term]
            self.total_length -= self.lengths[doc]
        del self.messages[keep:], self.units[keep:], self.tfs[keep:], self.lengths[keep:], self.vectors[keep:]

    def _extend(self, new: Sequence[Message]) -> None:
        new = list(new)
        texts = [message_text(m) for m in new]
        for m, text in zip(new, texts, strict=True):
            doc = len(self.messages)
            previous = self.messages[-1] if self.messages else None
            joins = m.role == "tool" and previous is not None and (previous.tool_calls or previous.role == "tool")
            self.units.append(self.units[-1] if joins else doc)
            tf = Counter(terms(text))
            for term, n in tf.items():
                self.postings.setdefault(term, {})[doc] = n
            length = sum(tf.values())
            self.total_length += length
            self.lengths.append(length)
            self.messages.append(m)
            self.tfs.append(tf)
        if self.embedder is not None and new:
            self.vectors.extend(_vectors(self.embedder, texts))

    def rank(self, query: str, eligible: Callable[[int], bool]) -> list[Scored]:
        """Documents with ``eligible(doc)`` true that share a term with ``query`` (or, hybrid, any), best first.

        BM25 alone ranks by its score; with an embedder the BM25 and cosine
        rankings are fused by reciprocal rank (k = 60), the usual hybrid that
        needs no score calibration.
        """
        bm25, matched = self._bm25(terms(query), eligible)
        if self.embedder is None:
            scored = [Scored(d, s, s, tuple(matched[d]), None) for d, s in bm25.items()]
            return sorted(scored, key=lambda s: (-s.score, s.doc))
        q = _vectors(self.embedder, [query])[0]
        cosines = {d: _cosine(q, self.vectors[d]) for d in range(len(self.messages)) if eligible(d)}
        fused: dict[int, float] = {}
        for ranking in (bm25, cosines):
            for rank, d in enumerate(sorted(ranking, key=lambda d: (-ranking[d], d))):
                fused[d] = fused.get(d, 0.0) + 1.0 / (61 + rank)
        scored = [Scored(d, s, bm25.get(d, 0.0), tuple(matched.get(d, ())), cosines[d]) for d, s in fused.items()]
        return sorted(scored, key=lambda s: (-s.score, s.doc))

    def _bm25(self, query_terms: list[str], eligible: Callable[[int], bool]) -> tuple[dict[int, float], dict[int, list[str]]]:
        n = len(self.messages)
        if not n:
            return {}, {}
        average = self.total_length / n or 1.0
        scores: dict[int, float] = {}
        matched: dict[int, list[str]] = {}
        for term in dict.fromkeys(query_terms):
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
            for doc, tf in posting.items():
                if not eligible(doc):
                    continue
                norm = tf + self.k1 * (1 - self.b + self.b * self.lengths[doc] / average)
                scores[doc] = scores.get(doc, 0.0) + idf * tf * (self.k1 + 1) / norm
                matched.setdefault(doc, []).append(term)
        return scores, matched


def _common_prefix(seen: list[Message], messages: Sequence[Message]) -> int:
    """How many leading items of ``messages`` are the very objects ``seen`` holds (a binary search, C-level compares)."""
    n = min(len(seen), len(messages))
    if n == 0:
        return 0
    head = messages[:n]
    if all(map(is_, head, seen)):
        return n
    lo, hi = 0, n - 1  # invariant: the first lo items are shared; item hi (or one before it) is not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if all(map(is_, head[lo:mid], seen[lo:mid])):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _vectors(embedder: Embedder, texts: list[str]) -> list[tuple[float, ...]]:
    out = [tuple(float(x) for x in v) for v in embedder(texts)]
    if len(out) != len(texts):
        raise ValueError(f"recall embedder returned {len(out)} vectors for {len(texts)} texts; it must return one per text")
    return out


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        raise ValueError(f"recall embedder returned vectors of lengths {len(a)} and {len(b)}; they must all be one length")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0
