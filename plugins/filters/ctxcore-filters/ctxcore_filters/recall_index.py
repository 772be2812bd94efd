"""An incremental BM25 index over one conversation's messages, with optional embeddings for hybrid ranking.

Invariant: after ``index.sync(items)`` the index equals a fresh
``RecallIndex().sync(items)`` (the same documents, units, postings and
lengths), whatever syncs came before. A sync keeps the longest prefix it
indexed whose items are the very same objects and re-indexes from the first
change, so a next turn tokenizes only the new messages, and an edited or
truncated history is indexed again from the edit. The items may be a lazy
history's stored items (:func:`ctxcore.kit.structure_of`, identity-stable
across builds): then only the new ones are read as messages. Why: a thread of
20,000 messages must not be re-read or re-tokenized on every build.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from operator import is_
from typing import Any, Protocol, runtime_checkable

from ctxcore import Message
from ctxcore_filters.recall_vectors import VectorStore, vector_store

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

    def __init__(
        self, embedder: Embedder | None = None, k1: float = 1.2, b: float = 0.75, vectors: VectorStore | None = None,
    ) -> None:
        """``vectors``: where an embedder's vectors are kept (default: :func:`~ctxcore_filters.recall_vectors.vector_store`)."""
        self.embedder = embedder
        self.k1, self.b = k1, b
        self.items: list[Any] = []  # what was indexed: messages, or a lazy history's stored items
        self.units: list[int] = []
        self.ids: list[str] = []  # per document, read from its message (a stand-in's id may cost a hash)
        self.recallable: list[bool] = []  # not a system message, not protected (those are always sent)
        # unit start -> (quoted text, tokens, its messages), filled by the caller: a unit is read and quoted once
        self.quotes: dict[int, tuple[str, int, tuple[Message, ...]]] = {}
        self.docs: dict[str, int] = {}  # message id -> its (last) document
        self.blocked: set[int] = set()  # documents never recalled: system or protected messages
        self.tfs: list[Counter[str]] = []
        self.lengths: list[int] = []
        self.postings: dict[str, dict[int, int]] = {}
        self.total_length = 0
        # the newest user message's text and document: a build's question, whose vector is then read, not embedded again
        self.last_user: tuple[str, int] | None = None
        # made only with an embedder: a BM25-only index never imports numpy
        self.vectors: VectorStore | None = None if embedder is None else vectors if vectors is not None else vector_store()

    def sync(
        self, items: Sequence[Any], read: Callable[[int, int], Sequence[Message]] | None = None, known: int = 0,
    ) -> int:
        """Make the index hold exactly ``items``; return how many leading documents were kept as they were.

        ``read(a, b)`` gives the messages of ``items[a:b]`` (default: the items
        are messages); it is called for the new part only. ``known`` is how
        many leading items the caller has proved unchanged since the last sync
        (a view's :meth:`~ctxcore.kit.Snapshot.shares`): they are not compared.
        """
        keep = _common_prefix(self.items, items, min(known, len(self.items), len(items)))
        self._truncate(keep)
        if keep < len(items):
            new = items[keep:] if keep else list(items)
            self._extend(new, new if read is None else read(keep, len(items)))
        return keep

    def _truncate(self, keep: int) -> None:
        if keep >= len(self.items):
            return  # nothing to take back (a next turn)
        if self.last_user is not None and self.last_user[1] >= keep:
            self.last_user = None  # an older question is embedded when asked
        for doc in range(keep, len(self.items)):
            tf = self.tfs[doc]
            for term in tf:
                posting = self.postings[term]
                del posting[doc]
                if not posting:
                    del self.postings[term]
            self.total_length -= self.lengths[doc]
        for start in [u for u in self.quotes if u >= (self.units[keep] if keep < len(self.units) else keep)]:
            del self.quotes[start]
        for doc in range(keep, len(self.ids)):
            if self.docs.get(self.ids[doc]) == doc:
                del self.docs[self.ids[doc]]
            self.blocked.discard(doc)
        del self.ids[keep:], self.recallable[keep:]
        del self.items[keep:], self.units[keep:], self.tfs[keep:], self.lengths[keep:]
        if self.vectors is not None:
            self.vectors.truncate(keep)

    def _extend(self, items: Sequence[Any], messages: Sequence[Message]) -> None:
        texts = [message_text(m) for m in messages]
        if self.vectors is not None and self.embedder is not None and texts:
            # first: an embedder that fails (or returns a wrong shape) leaves the index as it was
            self.vectors.extend(self.embedder(texts), len(texts))
        for item, m, text in zip(items, messages, texts, strict=True):
            doc = len(self.items)
            self.ids.append(m.id)
            self.docs[m.id] = doc
            self.recallable.append(m.role != "system" and m.zone != "protected")
            if not self.recallable[-1]:
                self.blocked.add(doc)
            previous = self.items[-1] if self.items else None
            joins = item.role == "tool" and previous is not None and (previous.has_tool_calls or previous.role == "tool")
            self.units.append(self.units[-1] if joins else doc)
            tf = Counter(terms(text))
            for term, n in tf.items():
                self.postings.setdefault(term, {})[doc] = n
            length = sum(tf.values())
            self.total_length += length
            self.lengths.append(length)
            self.items.append(item)
            self.tfs.append(tf)
            if m.role == "user":
                self.last_user = (text, doc)

    def first_of(self, messages: Iterable[Message]) -> int:
        """The document of the first of ``messages`` that is indexed, or the document count.

        ``messages`` are in the conversation's order (a kept window), so the
        first one indexed is the oldest: the window's start in the index.
        """
        docs = self.docs
        return next((docs[m.id] for m in messages if m.id in docs), len(self.items))

    def rank(self, query: str, before: int, limit: int | None = None) -> list[Scored]:
        """The ``limit`` (default: all) best recallable documents below ``before`` sharing a term with ``query``, best first."""
        ranked = self.ranked(query, before)
        return list(ranked if limit is None else islice(ranked, limit))

    def ranked(self, query: str, before: int) -> Iterator[Scored]:
        """The recallable documents below ``before``, best first, produced as the caller reads them.

        BM25 alone ranks the documents sharing a term with ``query`` by their
        score; with an embedder every recallable document is ranked, the BM25
        and cosine rankings fused by reciprocal rank (k = 60), the usual hybrid
        that needs no score calibration, by the index's vector store
        (:mod:`ctxcore_filters.recall_vectors`: one matrix-vector product
        where numpy imports). A ``query`` that is the newest user message's
        text (a build's question) is not embedded again: its vector is read
        from the index. Ties go to the older document. The BM25 order is
        produced by a heap, so a caller that stops after a few units pays for
        a linear heapify and a few pops, not for a full sort.
        """
        query_terms = list(dict.fromkeys(terms(query)))
        bm25 = self._bm25(query_terms, before)
        if self.embedder is None or self.vectors is None:
            for d in _best_first(bm25):
                yield Scored(d, bm25[d], bm25[d], self._matched(d, query_terms), None)
            return
        known = self.last_user
        asked = [self.vectors.row(known[1])] if known is not None and known[0] == query else self.embedder([query])
        for d, score, cosine in self.vectors.fused(asked, before, self.blocked, bm25):
            yield Scored(d, score, bm25.get(d, 0.0), self._matched(d, query_terms), cosine)

    def _matched(self, doc: int, query_terms: list[str]) -> tuple[str, ...]:
        tf = self.tfs[doc]
        return tuple(t for t in query_terms if t in tf)

    def _bm25(self, query_terms: list[str], before: int) -> dict[int, float]:
        """BM25 of every recallable document below ``before`` that holds a query term (one pass per term's postings)."""
        n = len(self.items)
        if not n:
            return {}
        k1, blocked, lengths = self.k1, self.blocked, self.lengths
        base, per_length = k1 * (1 - self.b), k1 * self.b / (self.total_length / n or 1.0)
        scores: dict[int, float] = {}
        get = scores.get
        for term in query_terms:
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (n - len(posting) + 0.5) / (len(posting) + 0.5)) * (k1 + 1)
            for doc, tf in posting.items():
                if doc < before and doc not in blocked:
                    scores[doc] = get(doc, 0.0) + idf * tf / (tf + base + per_length * lengths[doc])
        return scores


def _best_first(scores: dict[int, float]) -> Iterator[int]:
    """The documents of ``scores``, highest score first (older first on a tie), popped from a heap one by one."""
    heap = [(-score, doc) for doc, score in scores.items()]
    heapq.heapify(heap)
    while heap:
        yield heapq.heappop(heap)[1]


def _common_prefix(seen: list[Any], items: Sequence[Any], known: int = 0) -> int:
    """How many leading ``items`` are the very objects ``seen`` holds, the first ``known`` taken as proven.

    A gallop back from the end, then a binary search; each probe is one C-level pass.
    """
    n = min(len(seen), len(items))
    if known >= n:
        return n
    head = items[:n]
    if all(map(is_, head[known:], seen[known:n])):
        return n
    lo, hi, step = known, n - 1, 1  # invariant: the first lo items are shared; the first hi + 1 are not
    while hi - step > lo:  # gallop back from the end: a next turn differs only in its last few items
        if all(map(is_, head[lo:hi - step], seen[lo:hi - step])):
            lo = hi - step
            break
        hi, step = hi - step - 1, step * 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if all(map(is_, head[lo:mid], seen[lo:mid])):
            lo = mid
        else:
            hi = mid - 1
    return lo
