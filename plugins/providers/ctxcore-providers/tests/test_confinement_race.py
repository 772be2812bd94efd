"""Confinement under races: files and directories flipped to symlinks pointing outside while builds run.

Two tests: one where the attacker wins every race (the flip happens exactly
between the path check and the read, so a reader that reopens by name leaks on
every build), and a timed stress test against a real concurrent flipper.

A separate process flips, as fast as it can, a workspace file, an imported
file's directory, the memory directory and a skill directory between the real
entry and a symlink to an outside copy that holds ``OUTSIDE-BYTES``. The main
process builds the whole time; no request may contain a single outside byte.

Bounded in time, not in speed: the quick profile runs 2 seconds,
``CTXCORE_THOROUGH=1`` runs 30 (docs/security.md). The assertion does not depend
on how many builds fit in the time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from ctxcore import ComponentError, Pipeline
from ctxcore.kit import FileRefused

SECONDS = 30.0 if os.environ.get("CTXCORE_THOROUGH") == "1" else 2.0

_FLIPPER = textwrap.dedent(
    """
    import os, sys, time
    ws, out, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    files = ["AGENTS.md"]
    dirs = ["docs", "memory", os.path.join("skills", "s1")]
    for name in files:
        link = os.path.join(ws, "." + name + ".link")
        if not os.path.lexists(link):
            os.symlink(os.path.join(out, name), link)
    while not os.path.exists(stop):
        for name in files:
            target, link, real = (os.path.join(ws, p) for p in (name, "." + name + ".link", "." + name + ".real"))
            os.replace(target, real)          # the regular file steps aside
            os.replace(link, target)          # the symlink to the outside copy takes its name
            os.replace(target, link)
            os.replace(real, target)          # and back
        for name in dirs:
            target = os.path.join(ws, name)
            real = target + ".real"
            os.rename(target, real)
            os.symlink(os.path.join(out, name), target)
            os.unlink(target)
            os.rename(real, target)
    """
)


def _tree(root: Path, tag: str) -> None:
    (root / "docs").mkdir(parents=True)
    (root / "memory").mkdir()
    (root / "skills" / "s1").mkdir(parents=True)
    (root / "AGENTS.md").write_text(f"agents {tag}\n\n@import docs/shared.md\n")
    (root / "docs" / "shared.md").write_text(f"shared {tag}\n")
    (root / "memory" / "MEMORY.md").write_text(f"memory {tag}\n")
    (root / "skills" / "s1" / "SKILL.md").write_text(f"---\nname: s1\ndescription: skill {tag}\nalways: true\n---\nbody {tag}\n")


def _pipeline(ws: Path) -> Pipeline:
    return Pipeline.from_dict({
        "version": 1,
        "model": {"context_window": 100_000},
        "providers": [  # a tiny ttl: every build reads the files again, so every build races
            {"type": "bootstrap_files", "workspace": str(ws), "files": ["AGENTS.md"], "ttl_seconds": 1e-9},
            {"type": "memory_file", "workspace": str(ws), "ttl_seconds": 1e-9, "optional": True},
            {"type": "skills", "workspace": str(ws), "mode": "full", "ttl_seconds": 1e-9},
            {"type": "history"},
        ],
    })


def _flip_to_outside(ws: Path, out: Path, rel: str) -> None:
    """Replace ``ws/rel`` (a file or a directory) by a symlink to ``out/rel``."""
    target = ws / rel
    os.rename(target, target.with_name(target.name + ".real"))
    os.symlink(out / rel, target)


@pytest.mark.parametrize(("watched", "flipped"), [
    ("AGENTS.md", "AGENTS.md"),              # a file swapped for a symlink
    ("docs/shared.md", "docs"),              # an @import target's directory swapped
    ("memory/MEMORY.md", "memory"),          # memory_file's directory swapped
    ("skills/s1/SKILL.md", "skills/s1"),     # a skill directory swapped
])
def test_a_flip_right_after_the_path_check_is_never_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             watched: str, flipped: str) -> None:
    """When the path turns into a symlink to outside after it was checked and before it is opened, no outside byte is read."""
    ws, out = tmp_path / "ws", tmp_path / "out"
    _tree(ws, "inside")
    _tree(out, "OUTSIDE-BYTES")
    ws, out = ws.resolve(), out.resolve()
    real_open = os.open
    armed = [True]

    def flip_then_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        # the attacker wins this race: between every check and the first open below the
        # workspace, the checked path is turned into a symlink that leads outside
        if armed[0] and kwargs.get("dir_fd") is None and Path(path) in (ws / watched, *(ws / watched).parents):
            armed[0] = False
            _flip_to_outside(ws, out, flipped)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", flip_then_open)
    pipeline = _pipeline(ws)
    body = json.dumps(pipeline.build({"messages": [{"role": "user", "content": "hi"}]}).to_openai())
    assert not armed[0], "the flip never happened: the test did not race"
    assert "OUTSIDE-BYTES" not in body


def test_no_outside_byte_reaches_a_request_while_paths_flip(tmp_path: Path) -> None:
    """While files and directories flip between real entries and symlinks to outside, 0 outside bytes reach any request."""
    ws, out = tmp_path / "ws", tmp_path / "out"
    _tree(ws, "inside")
    _tree(out, "OUTSIDE-BYTES")
    pipeline = _pipeline(ws)
    stop = tmp_path / "stop"
    flipper = subprocess.Popen([sys.executable, "-c", _FLIPPER, str(ws), str(out), str(stop)])
    builds = inside_seen = refused = 0
    leaked: list[str] = []
    try:
        deadline = time.monotonic() + SECONDS
        while time.monotonic() < deadline and flipper.poll() is None:
            try:
                body = json.dumps(pipeline.build({"messages": [{"role": "user", "content": "hi"}]}).to_openai())
            except ComponentError as exc:  # memory_file refuses (fails closed) while its path is a symlink outside
                assert isinstance(exc.__cause__, FileRefused), exc
                refused += 1
                continue
            builds += 1
            inside_seen += "inside" in body
            if "OUTSIDE-BYTES" in body:
                leaked.append(body)
    finally:
        stop.touch()
        flipper.wait(30)
    assert flipper.returncode == 0, "the flipper process failed"
    assert leaked == [], f"{len(leaked)} of {builds} requests carried outside bytes"
    assert builds > 0 and inside_seen > 0, (builds, refused)  # the workspace itself was still read
