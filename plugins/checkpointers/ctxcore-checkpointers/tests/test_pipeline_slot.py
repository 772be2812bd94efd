"""The `checkpointer:` slot of a YAML pipeline creates each backend with its options."""

from __future__ import annotations

from pathlib import Path

import ctxcore_checkpointers.plugin
import ctxcore_counters.plugin
import pytest
from ctxcore_checkpointers import (
    JsonlCheckpointer,
    MemoryCheckpointer,
    NullCheckpointer,
    SqliteCheckpointer,
)

from ctxcore import ConfigError, Pipeline
from ctxcore.testing import fresh_host


@pytest.fixture
def host():
    """A host with the counters (every pipeline needs one) and the checkpointers."""
    return fresh_host(("ctxcore-counters", ctxcore_counters.plugin), ("ctxcore-checkpointers", ctxcore_checkpointers.plugin))


@pytest.mark.parametrize(
    ("slot", "kind"),
    [("memory", MemoryCheckpointer), ("\"null\"", NullCheckpointer), ("{type: \"null\"}", NullCheckpointer), ("{type: jsonl, path: DIR/j}", JsonlCheckpointer),
     ("{type: sqlite, path: DIR/c.db, busy_timeout_ms: 500}", SqliteCheckpointer)],
)
def test_slot_creates_backend(host, tmp_path: Path, slot: str, kind: type) -> None:
    """Each backend is created from YAML and works."""
    p = Pipeline.from_string(f"version: 1\ncheckpointer: {slot.replace('DIR', str(tmp_path))}\n", host=host)
    cp = p.checkpointer
    assert isinstance(cp, kind)
    cp.save_checkpoint("t", 1, {"ok": True})
    if kind is not NullCheckpointer:
        assert cp.get_checkpoint("t")["state_dump"] == {"ok": True}
    if kind is SqliteCheckpointer:
        assert cp.busy_timeout_ms == 500 and cp.path == tmp_path / "c.db"


def test_unknown_option_names_the_line(host) -> None:
    """A misspelled option is reported with its line and the close name."""
    with pytest.raises(ConfigError) as err:
        Pipeline.from_string("version: 1\ncheckpointer:\n  type: sqlite\n  pth: x.db\n", file="p.yaml", host=host)
    assert "p.yaml:4:3" in str(err.value) and "did you mean 'path'?" in str(err.value)


def test_bare_yaml_null_means_no_checkpointer(host) -> None:
    """Unquoted `checkpointer: null` is YAML's null (no checkpointer); the backend needs quotes."""
    assert Pipeline.from_string("version: 1\ncheckpointer: null\n", host=host).checkpointer is None
