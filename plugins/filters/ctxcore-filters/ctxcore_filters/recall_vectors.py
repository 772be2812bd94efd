"""The embedding vectors of a recall index, and the hybrid ranking over them.

Each vector is normalised once, when its message is indexed (a zero vector
stays zero: its cosine is 0), so a build's cosine is one dot product per
document. Two stores keep them with one interface: :class:`PyVectors`, pure
Python, the reference; and ``NumpyVectors`` (:mod:`ctxcore_filters.recall_matrix`),
a float64 matrix grown incrementally and scored with one matrix-vector
product. :func:`vector_store` picks the numpy one where numpy imports. Why: at
20,000 messages of 384 dimensions, a Python dot product per document is most
of a build.

Both rank alike: cosines are ranked on a grid of ``2**-30`` (about 1e-9),
closer ones counting as tied (the older document first), because the two
stores' sums round differently in the last bits; the BM25 and cosine rankings
are fused by reciprocal rank (k = 60) with the same float operations in both.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Iterator, Sequence
from operator import mul
from typing import Any, Protocol

__all__ = ["GRID", "PyVectors", "VectorStore", "bm25_order", "check_count", "vector_store"]

#: cosines are ranked rounded to this many steps per unit: closer ones are ties (the older document first)
GRID = 2.0**30
#: the reciprocal-rank constant: a document at rank r (from 0) gets 1 / (RRF_K + 1 + r)
RRF_K = 60


class VectorStore(Protocol):
    """Where an index keeps its documents' vectors: appended and truncated with the index, scored per query."""

    def __len__(self) -> int: ...

    def extend(self, vectors: Sequence[Sequence[float]] | Any, count: int) -> None:
        """Append ``count`` documents' vectors (the embedder's output for their texts), normalised."""

    def truncate(self, keep: int) -> None:
        """Keep the first ``keep`` documents' vectors."""

    def rows(self) -> list[list[float]]:
        """The stored (normalised) vectors, as lists of floats."""

    def row(self, doc: int) -> list[float]:
        """Document ``doc``'s stored (normalised) vector."""

    def fused(self, query: Sequence[Sequence[float]] | Any, before: int, blocked: set[int], bm25: dict[int, float],
              ) -> Iterator[tuple[int, float, float]]:
        """``(document, fused score, cosine)`` of every document below ``before`` not ``blocked``, best first.

        ``query`` is the embedder's output for the query alone; ``bm25`` the
        BM25 scores of the documents that share a term with it.
        """


def vector_store() -> VectorStore:
    """The numpy store where numpy imports, else the pure-Python one."""
    try:
        from ctxcore_filters.recall_matrix import NumpyVectors
    except ImportError:
        return PyVectors()
    return NumpyVectors()


def check_count(got: int, wanted: int) -> None:
    """An embedder must return one vector per text."""
    if got != wanted:
        raise ValueError(f"recall embedder returned {got} vectors for {wanted} texts; it must return one per text")


def check_length(got: int, wanted: int) -> None:
    """An embedder's vectors must all have one length."""
    if got != wanted:
        raise ValueError(f"recall embedder returned vectors of lengths {wanted} and {got}; they must all be one length")


def bm25_order(bm25: dict[int, float]) -> list[int]:
    """The BM25 ranking: best first, the older document first on a tie."""
    return sorted(bm25, key=lambda d: (-bm25[d], d))


class PyVectors:
    """The pure-Python store: one ``array('d')`` of the normalised vector per document."""

    def __init__(self) -> None:
        self.vectors: list[array[float]] = []

    def __len__(self) -> int:
        return len(self.vectors)

    def extend(self, vectors: Sequence[Sequence[float]] | Any, count: int) -> None:
        """Append ``count`` documents' vectors, each normalised once."""
        rows = [_unit(v) for v in vectors]
        check_count(len(rows), count)
        width = len(self.vectors[0]) if self.vectors else len(rows[0]) if rows else 0
        for row in rows:
            check_length(len(row), width)
        self.vectors.extend(rows)

    def truncate(self, keep: int) -> None:
        """Keep the first ``keep`` documents' vectors."""
        del self.vectors[keep:]

    def rows(self) -> list[list[float]]:
        """The stored (normalised) vectors, as lists of floats."""
        return [list(v) for v in self.vectors]

    def row(self, doc: int) -> list[float]:
        """Document ``doc``'s stored (normalised) vector."""
        return list(self.vectors[doc])

    def fused(self, query: Sequence[Sequence[float]] | Any, before: int, blocked: set[int], bm25: dict[int, float],
              ) -> Iterator[tuple[int, float, float]]:
        """``(document, fused score, cosine)`` of every document below ``before`` not ``blocked``, best first."""
        q = self._query(query)
        vectors = self.vectors
        cosines = {d: sum(map(mul, q, vectors[d])) for d in range(before) if d not in blocked}
        fused: dict[int, float] = {}
        for rank, d in enumerate(bm25_order(bm25)):
            fused[d] = 1.0 / (RRF_K + 1 + rank)
        for rank, d in enumerate(sorted(cosines, key=lambda d: (-round(cosines[d] * GRID), d))):
            fused[d] = fused.get(d, 0.0) + 1.0 / (RRF_K + 1 + rank)
        heap = [(-score, d) for d, score in fused.items()]
        heapq.heapify(heap)
        while heap:
            d = heapq.heappop(heap)[1]
            yield d, fused[d], cosines[d]

    def _query(self, query: Sequence[Sequence[float]] | Any) -> array[float]:
        rows = [_unit(v) for v in query]
        check_count(len(rows), 1)
        if self.vectors:
            check_length(len(rows[0]), len(self.vectors[0]))
        return rows[0]


def _unit(vector: Sequence[float]) -> array[float]:
    """``vector`` scaled to length 1 (a zero vector stays zero)."""
    v = array("d", map(float, vector))
    norm = math.hypot(*v)
    return array("d", [x / norm for x in v]) if norm else v
