"""The numpy store of a recall index's vectors: one float64 matrix, grown incrementally, one product per query.

Imported only where numpy is (:func:`ctxcore_filters.recall_vectors.vector_store`);
it ranks as :class:`~ctxcore_filters.recall_vectors.PyVectors` does (see that
module), in array operations: a build's cost is a matrix-vector product and
two sorts in C, not a Python loop over the documents.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ctxcore_filters.recall_vectors import GRID, RRF_K, bm25_order, check_count, check_length

__all__ = ["NumpyVectors"]


class NumpyVectors:
    """The normalised vectors as the first ``len(self)`` rows of a matrix with room to grow (by a quarter at least)."""

    def __init__(self) -> None:
        self.matrix = np.zeros((0, 0))
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def extend(self, vectors: Sequence[Sequence[float]] | Any, count: int) -> None:
        """Append ``count`` documents' vectors, each normalised once."""
        rows = _normalised(vectors, count)
        if not count:
            return
        if self.count:
            check_length(rows.shape[1], self.matrix.shape[1])
        end = self.count + len(rows)
        if end > len(self.matrix) or rows.shape[1] != self.matrix.shape[1]:
            grown = np.empty((max(end, len(self.matrix) + len(self.matrix) // 4), rows.shape[1]))
            if self.count:  # (a new width only ever comes to an empty store)
                grown[:self.count] = self.matrix[:self.count]
            self.matrix = grown
        self.matrix[self.count:end] = rows
        self.count = end

    def truncate(self, keep: int) -> None:
        """Keep the first ``keep`` documents' vectors (the rows after them are overwritten by the next extend)."""
        self.count = min(self.count, keep)

    def rows(self) -> list[list[float]]:
        """The stored (normalised) vectors, as lists of floats."""
        return self.matrix[:self.count].tolist()

    def row(self, doc: int) -> list[float]:
        """Document ``doc``'s stored (normalised) vector."""
        return self.matrix[doc].tolist()

    def fused(self, query: Sequence[Sequence[float]] | Any, before: int, blocked: set[int], bm25: dict[int, float],
              ) -> Iterator[tuple[int, float, float]]:
        """``(document, fused score, cosine)`` of every document below ``before`` not ``blocked``, best first."""
        q = _normalised(query, 1)
        if self.count:
            check_length(q.shape[1], self.matrix.shape[1])
        cosines = self.matrix[:before] @ q[0]
        docs = np.ones(before, dtype=bool)
        docs[[d for d in blocked if d < before]] = False
        docs = np.flatnonzero(docs)
        ranked = docs[np.argsort(-np.rint(cosines[docs] * GRID), kind="stable")]
        fused = np.zeros(before)
        fused[ranked] = 1.0 / (RRF_K + 1 + np.arange(len(ranked)))
        if bm25:
            order = np.array(bm25_order(bm25))
            fused[order] += 1.0 / (RRF_K + 1 + np.arange(len(order)))
        for d in docs[np.argsort(-fused[docs], kind="stable")].tolist():
            yield d, float(fused[d]), float(cosines[d])


def _normalised(vectors: Sequence[Sequence[float]] | Any, count: int) -> np.ndarray:
    """The embedder's ``count`` vectors as the rows of a float64 matrix, each scaled to length 1 (zero stays zero)."""
    check_count(len(vectors), count)
    if not count:
        return np.zeros((0, 0))
    try:
        rows = np.asarray(vectors, dtype=np.float64)
    except ValueError as exc:  # ragged: not one length
        raise ValueError("recall embedder returned vectors of different lengths; they must all be one length") from exc
    if rows.ndim != 2:
        raise ValueError(f"recall embedder returned an array of shape {rows.shape}; it must return one vector per text")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
