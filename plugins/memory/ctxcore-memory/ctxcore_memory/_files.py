"""File-system helpers shared by the json and sqlite memory stores."""

from __future__ import annotations

from pathlib import Path


def make_parent_dir(path: Path, store: str) -> None:
    """Create the directory of ``path``; failing, raise the same ``OSError`` type naming the store, the path and the fix."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise type(exc)(
            exc.errno,
            f"memory {store!r}: cannot create the directory of {path} ({exc.strerror}: {exc.filename}); "
            "set the memory step's 'path' to a file in a writable directory",
        ) from exc
