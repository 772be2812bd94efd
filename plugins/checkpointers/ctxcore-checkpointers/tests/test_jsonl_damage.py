"""Damaged jsonl files: a torn tail never raises and reads as the newest complete record; earlier damage always raises."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctxcore_checkpointers import JsonlCheckpointer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import CheckpointCorrupt

STATE = {"messages": [{"role": "user", "content": "nul \x00 😀 ünï"}], "n": 1.5}


def _three(tmp: Path) -> tuple[JsonlCheckpointer, Path, bytes, list[int]]:
    """A thread with steps 1..3; returns the file, its bytes and each record's start offset."""
    cp = JsonlCheckpointer(tmp)
    starts = []
    for step in (1, 2, 3):
        file = cp.file_for("t")
        starts.append(file.stat().st_size if file.exists() else 0)
        cp.save_checkpoint("t", step, {**STATE, "step": step})
    file = cp.file_for("t")
    return cp, file, file.read_bytes(), starts


def _expect_step(tmp: Path, step: int) -> None:
    fresh = JsonlCheckpointer(tmp)
    got = fresh.get_checkpoint("t")
    assert got is not None and got["step"] == step and got["state_dump"] == {**STATE, "step": step}
    assert [c["step"] for c in fresh.list_checkpoints("t")] == list(range(1, step + 1))


def _repairs(tmp: Path, newest: int) -> None:
    """The next writer cuts the damaged tail and appends; the file is clean again."""
    fresh = JsonlCheckpointer(tmp)
    fresh.save_checkpoint("t", newest + 1, {"after": "repair"})
    again = JsonlCheckpointer(tmp)
    assert [c["step"] for c in again.list_checkpoints("t")] == [*range(1, newest + 1), newest + 1]
    data = again.file_for("t").read_bytes()
    assert data.endswith(b"}\n") and data.count(b"\n") == newest + 1


class TestTornTail:
    def test_truncation_at_every_byte_of_the_last_record(self, tmp_path: Path) -> None:
        """Cutting the file anywhere inside its last record reads as the record before; the next save repairs it."""
        _, file, data, starts = _three(tmp_path)
        for cut in range(starts[2], len(data)):
            file.write_bytes(data[:cut])
            _expect_step(tmp_path, 2)
        for cut in range(starts[2] + 1, len(data), 37):  # repair from a sample of the cut points
            file.write_bytes(data[:cut])
            _repairs(tmp_path, 2)

    @pytest.mark.parametrize(
        "tail",
        [b"\x00", b"\x00" * 4096, b"\n", b"\n\n\n", b"\r\n", b"  \t\n", b"\xff\xfe\xc3(\n", b'{"crc":"deadbeef","seq":4,"record":{}}\n',
         b'{"crc":"00000000","seq":4,"record":{"thread_id":"t"\xc3\x28', b"garbage without newline"],
        ids=["nul", "nul-page", "blank", "blank-lines", "crlf", "whitespace", "invalid-utf8", "bad-checksum", "torn-invalid-utf8", "garbage"],
    )
    def test_damaged_tail_after_complete_records(self, tmp_path: Path, tail: bytes) -> None:
        """NUL padding, blank lines, CRLF, invalid UTF-8 or a bad last record read as the newest complete record."""
        _, file, data, _ = _three(tmp_path)
        file.write_bytes(data + tail)
        _expect_step(tmp_path, 3)
        _repairs(tmp_path, 3)

    def test_torn_record_then_nul_padding(self, tmp_path: Path) -> None:
        """A half-written record followed by NUL bytes (a crash after the size grew) is a torn tail."""
        _, file, data, starts = _three(tmp_path)
        file.write_bytes(data[: starts[2] + 40] + b"\x00" * 512)
        _expect_step(tmp_path, 2)
        _repairs(tmp_path, 2)

    def test_crlf_last_record_is_a_damaged_tail(self, tmp_path: Path) -> None:
        """A last record whose line ending became CRLF no longer verifies and is ignored."""
        _, file, data, _ = _three(tmp_path)
        file.write_bytes(data[:-1] + b"\r\n")
        _expect_step(tmp_path, 2)

    def test_only_a_torn_record(self, tmp_path: Path) -> None:
        """A file holding nothing but a torn first record reads as an empty thread."""
        _, file, data, starts = _three(tmp_path)
        file.write_bytes(data[: starts[1] - 5])
        fresh = JsonlCheckpointer(tmp_path)
        assert fresh.get_checkpoint("t") is None
        assert fresh.list_threads() == []
        fresh.save_checkpoint("t", 1, {"fresh": True})
        assert [c["step"] for c in JsonlCheckpointer(tmp_path).list_checkpoints("t")] == [1]

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(tail=st.binary(min_size=1, max_size=300) | st.sampled_from([b'{"crc":"', b'x{"crc":"y\n']), cut=st.integers(min_value=0, max_value=400))
    def test_any_tail_bytes(self, tmp_path_factory: pytest.TempPathFactory, tail: bytes, cut: int) -> None:
        """Property: bytes replacing the end of the last record never raise, unless they hold a second record start."""
        tmp = tmp_path_factory.mktemp("tail")
        _, file, data, starts = _three(tmp)
        keep = min(len(data), starts[2] + cut)
        file.write_bytes(data[:keep] + tail)
        damaged = (data[starts[2] : keep] + tail) if keep < len(data) else tail
        if damaged.count(b'{"crc":"') > 1:  # more than one torn record: not what a crash leaves
            with pytest.raises(CheckpointCorrupt):
                JsonlCheckpointer(tmp).get_checkpoint("t")
            return
        got = JsonlCheckpointer(tmp).get_checkpoint("t")
        assert got is not None and got["step"] in (2, 3)
        if keep < len(data):
            assert got["step"] == 2


class TestMidFileDamage:
    def _all_calls_raise(self, tmp: Path, file: Path) -> None:
        before = file.read_bytes()
        fresh = JsonlCheckpointer(tmp)
        with pytest.raises(CheckpointCorrupt, match=str(file.name)):
            fresh.get_checkpoint("t")
        with pytest.raises(CheckpointCorrupt):
            fresh.list_checkpoints("t")
        with pytest.raises(CheckpointCorrupt):
            fresh.save_checkpoint("t", 99, {})
        with pytest.raises(CheckpointCorrupt):
            fresh.prune("t", keep_last=1)
        assert file.read_bytes() == before  # nothing was appended to or cut from a corrupt file

    def test_a_zeroed_middle_record_raises(self, tmp_path: Path) -> None:
        """A whole middle record (its newline included) overwritten with NULs is mid-file damage, not a torn tail."""
        _, file, data, starts = _three(tmp_path)
        file.write_bytes(data[: starts[1]] + b"\x00" * (starts[2] - starts[1]) + data[starts[2] :])
        self._all_calls_raise(tmp_path, file)

    def test_every_changed_byte_before_the_last_record_raises(self, tmp_path: Path) -> None:
        """Changing any single byte of an earlier record (newlines included) raises CheckpointCorrupt."""
        _, file, data, starts = _three(tmp_path)
        for pos in range(0, starts[2]):
            damaged = bytearray(data)
            damaged[pos] ^= 0x01
            file.write_bytes(bytes(damaged))
            with pytest.raises(CheckpointCorrupt):
                JsonlCheckpointer(tmp_path).get_checkpoint("t")
        file.write_bytes(data[:10] + b"\x00" + data[11:])
        self._all_calls_raise(tmp_path, file)

    @pytest.mark.parametrize("what", ["blank-line", "crlf", "nul-run", "removed-record", "merged-lines", "invalid-utf8"])
    def test_structural_damage_raises(self, tmp_path: Path, what: str) -> None:
        """Blank lines, CRLF, NUL runs, a missing record, merged lines or bad UTF-8 mid-file raise."""
        _, file, data, starts = _three(tmp_path)
        first, second, third = data[: starts[1]], data[starts[1] : starts[2]], data[starts[2] :]
        damaged = {
            "blank-line": first + b"\n" + second + third,
            "crlf": first[:-1] + b"\r\n" + second + third,
            "nul-run": first + b"\x00" * 64 + second + third,
            "removed-record": first + third,
            "merged-lines": first + second[:-1] + third,
            "invalid-utf8": first + second[:50] + b"\xc3\x28" + second[52:] + third,
        }[what]
        file.write_bytes(damaged)
        self._all_calls_raise(tmp_path, file)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data_=st.data())
    def test_any_damage_before_the_last_record(self, tmp_path_factory: pytest.TempPathFactory, data_: st.DataObject) -> None:
        """Property: overwriting bytes anywhere before the last record with different bytes always raises."""
        tmp = tmp_path_factory.mktemp("mid")
        _, file, data, starts = _three(tmp)
        pos = data_.draw(st.integers(min_value=0, max_value=starts[2] - 1))
        length = data_.draw(st.integers(min_value=1, max_value=starts[2] - pos))
        junk = data_.draw(st.binary(min_size=length, max_size=length))
        if junk == data[pos : pos + length]:
            return
        file.write_bytes(data[:pos] + junk + data[pos + length :])
        with pytest.raises(CheckpointCorrupt):
            JsonlCheckpointer(tmp).get_checkpoint("t")
