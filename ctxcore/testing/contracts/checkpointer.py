"""``CheckpointerContract``: the checks every checkpointer backend must pass.

Subclass it in a test module, name the subclass ``Test...`` and implement
:meth:`CheckpointerContract.make_checkpointer`; pytest collects every check::

    from ctxcore.testing.contracts.checkpointer import CheckpointerContract

    class TestMyCheckpointer(CheckpointerContract):
        def make_checkpointer(self, location):
            return MyCheckpointer(location / "db")

``location`` is ``tmp_path`` unless the subclass overrides the ``location``
fixture (a PostgreSQL backend gives a fresh schema name, for example). Two calls
with the same location must reach the same stored data when ``persistent`` is
true. Set ``stores = False`` for a backend that keeps nothing (``null``): the
storage checks are skipped, the argument checks still run.
"""

from __future__ import annotations

import asyncio
import copy
import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore.engine.protocols import AsyncCheckpointer, Checkpointer
from ctxcore.errors import StaleWrite
from ctxcore.kit.checkpoints import UnstorableState
from ctxcore.testing.contracts.base import Contract

__all__ = ["CheckpointerContract", "json_values", "same_json"]

_KEYS = {"thread_id", "step", "state_dump", "tree_state", "runtime_metadata", "created_at"}


def json_values(max_leaves: int = 20) -> st.SearchStrategy[Any]:
    """Any JSON value: NUL and non-BMP characters, big ints, -0.0, nested containers."""
    scalars = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text()
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=max_leaves)


def same_json(a: Any, b: Any) -> bool:
    """Equal *and* of the same types all the way down (1, 1.0 and True differ; so do 0.0 and -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


TRICKY_STATE: dict[str, Any] = {
    "messages": [{"role": "user", "content": "nul:\x00 end"}, {"role": "assistant", "content": "emoji 😀 𝄞 and 中文"}],
    "": "empty key",
    "nested": {"a": [[], {}, [None, True, False]], "z": -0.0, "big": 2**64 + 1, "neg": -(2**63), "f": 1e-300},
    "control": "\t\r\n\x1b\x7f\u2028\u2029",
    "quote": '"}\n{"crc":"00000000"',
}


class CheckpointerContract(Contract):
    """Checks every checkpointer must pass; subclasses implement :meth:`make_checkpointer`."""

    __contract__ = True

    #: the backend keeps what it is given (false for ``null``).
    stores: bool = True
    #: a second instance on the same location sees what the first saved.
    persistent: bool = True
    #: examples per property-based check (keep it small for slow backends).
    max_examples: int = 25

    def make_checkpointer(self, location: Any) -> Any:  # pragma: no cover - subclasses implement
        raise NotImplementedError

    @pytest.fixture
    def location(self, tmp_path: Any) -> Any:
        """Where the backend keeps its data; override for non-file backends."""
        return tmp_path

    @pytest.fixture
    def cp(self, location: Any) -> Iterator[Any]:
        """A fresh checkpointer on ``location``, closed afterwards."""
        checkpointer = self.make_checkpointer(location)
        yield checkpointer
        close = getattr(checkpointer, "close", None)
        if callable(close):
            close()

    def _needs_storage(self) -> None:
        if not self.stores:
            pytest.skip("this backend stores nothing")

    # ------------------------------------------------------------ shape
    def test_satisfies_the_protocols(self, cp: Any) -> None:
        """The backend has every sync and async checkpointer method."""
        assert isinstance(cp, Checkpointer)
        assert isinstance(cp, AsyncCheckpointer)

    def test_empty_store_reads_empty(self, cp: Any) -> None:
        """An unknown thread has no checkpoint; deleting or pruning it is a no-op."""
        assert cp.get_checkpoint("nobody") is None
        assert cp.list_checkpoints("nobody") == []
        assert cp.list_threads() == []
        cp.delete_thread("nobody")
        assert cp.prune("nobody", keep_last=1) == 0

    def test_save_then_read(self, cp: Any) -> None:
        """A save is visible to the next read (a backend that stores nothing reads every thread as new)."""
        cp.save_checkpoint("t", 1, {"x": 1})
        if self.stores:
            assert cp.get_checkpoint("t")["state_dump"] == {"x": 1}
            assert cp.list_threads() == ["t"]
            assert len(cp.list_checkpoints("t")) == 1
        else:
            assert cp.get_checkpoint("t") is None
            assert cp.list_threads() == []
            assert cp.list_checkpoints("t") == []

    # ------------------------------------------------------------ saving and reading
    def test_round_trip_of_every_field(self, cp: Any) -> None:
        """What was saved comes back: state, tree state, metadata, step, thread id, created_at."""
        self._needs_storage()
        cp.save_checkpoint("t1", 3, {"messages": ["hi"]}, tree_state={"node": "a"}, runtime_metadata={"model": "m"})
        got = cp.get_checkpoint("t1")
        assert set(got) == _KEYS
        assert got["thread_id"] == "t1" and got["step"] == 3
        assert got["state_dump"] == {"messages": ["hi"]}
        assert got["tree_state"] == {"node": "a"} and got["runtime_metadata"] == {"model": "m"}
        assert isinstance(got["created_at"], str) and got["created_at"].endswith("+00:00")

    def test_optional_fields_default_to_none(self, cp: Any) -> None:
        """tree_state and runtime_metadata come back as None when not given."""
        self._needs_storage()
        cp.save_checkpoint("t", 0, {})
        got = cp.get_checkpoint("t")
        assert got["tree_state"] is None and got["runtime_metadata"] is None and got["step"] == 0

    def test_tricky_values_round_trip_exactly(self, cp: Any) -> None:
        """NUL, non-BMP characters, control characters, big ints and -0.0 come back identical."""
        self._needs_storage()
        cp.save_checkpoint("t", 1, TRICKY_STATE, tree_state=["\x00", "😀"], runtime_metadata={"k": 2**80})
        got = cp.get_checkpoint("t")
        assert same_json(got["state_dump"], TRICKY_STATE)
        assert same_json(got["tree_state"], ["\x00", "😀"])
        assert same_json(got["runtime_metadata"], {"k": 2**80})

    def test_any_json_value_round_trips(self, cp: Any) -> None:
        """Property: any JSON value saved as state (or tree state) is read back identical."""
        self._needs_storage()
        counter = iter(range(10**9))

        @settings(max_examples=self.max_examples, deadline=None, suppress_health_check=list(HealthCheck))
        @given(json_values(), json_values(max_leaves=5))
        def check(state: Any, tree: Any) -> None:
            thread = f"prop-{next(counter)}"
            cp.save_checkpoint(thread, 1, state, tree_state=tree)
            got = cp.get_checkpoint(thread)
            assert same_json(got["state_dump"], state)
            assert same_json(got["tree_state"], tree)

        check()

    def test_latest_wins_and_history_is_oldest_first(self, cp: Any) -> None:
        """get_checkpoint returns the newest step; list_checkpoints lists every step oldest first."""
        self._needs_storage()
        for step in (1, 2, 5, 9):
            cp.save_checkpoint("t", step, {"step": step})
        assert cp.get_checkpoint("t")["state_dump"] == {"step": 9}
        assert [c["step"] for c in cp.list_checkpoints("t")] == [1, 2, 5, 9]
        assert [c["state_dump"]["step"] for c in cp.list_checkpoints("t")] == [1, 2, 5, 9]

    def test_threads_are_isolated_and_listed_sorted(self, cp: Any) -> None:
        """Each thread has its own history; list_threads returns every thread, sorted."""
        self._needs_storage()
        threads = ["b", "a", "c/with/slashes", "ünï 😀", ".", "..", "%2F", "x" * 300, "😀" * 512]
        for thread in threads:
            cp.save_checkpoint(thread, 1, {"thread": thread})
        cp.save_checkpoint("a", 2, {"thread": "a", "again": True})
        assert cp.list_threads() == sorted(threads)
        assert cp.get_checkpoint("😀" * 512)["state_dump"] == {"thread": "😀" * 512}
        assert cp.get_checkpoint("b")["state_dump"] == {"thread": "b"}
        assert cp.get_checkpoint("x" * 300)["state_dump"] == {"thread": "x" * 300}
        assert cp.get_checkpoint("%2F")["state_dump"] == {"thread": "%2F"}
        assert [c["step"] for c in cp.list_checkpoints("a")] == [1, 2]

    def test_returned_values_are_copies(self, cp: Any) -> None:
        """Changing the saved object or a returned one does not change what is stored."""
        self._needs_storage()
        state = {"messages": ["one"]}
        cp.save_checkpoint("t", 1, state)
        state["messages"].append("two")
        got = cp.get_checkpoint("t")
        assert got["state_dump"] == {"messages": ["one"]}
        got["state_dump"]["messages"].append("three")
        assert cp.get_checkpoint("t")["state_dump"] == {"messages": ["one"]}

    # ------------------------------------------------------------ step order
    def test_same_or_older_step_is_stale(self, cp: Any) -> None:
        """A step not newer than the latest raises StaleWrite and writes nothing."""
        self._needs_storage()
        cp.save_checkpoint("t", 5, {"v": 5})
        for stale in (5, 4, 0):
            with pytest.raises(StaleWrite, match="not newer"):
                cp.save_checkpoint("t", stale, {"v": "stale"})
        assert [c["step"] for c in cp.list_checkpoints("t")] == [5]
        assert cp.get_checkpoint("t")["state_dump"] == {"v": 5}

    def test_bad_step_and_thread_are_refused(self, cp: Any) -> None:
        """Steps must be ints >= 0 (not bools), thread ids non-empty strings."""
        for step in (-1, 1.0, True, "1", None):
            with pytest.raises((TypeError, ValueError)):
                cp.save_checkpoint("t", step, {})
        for thread in ("", None, 3, "x" * 513):
            with pytest.raises((TypeError, ValueError)):
                cp.save_checkpoint(thread, 1, {})
            with pytest.raises((TypeError, ValueError)):
                cp.get_checkpoint(thread)
        assert cp.list_threads() == []

    # ------------------------------------------------------------ what cannot be stored
    @pytest.mark.parametrize(
        "bad",
        [
            {"text": "lone \ud800 surrogate"},
            {"key \udfff": 1},
            {"n": float("nan")},
            {"inf": float("inf")},
            {1: "int key"},
            {"t": (1, 2)},
            {"s": {1, 2}},
            {"b": b"bytes"},
            {"o": object()},
        ],
        ids=["lone-surrogate", "surrogate-key", "nan", "inf", "int-key", "tuple", "set", "bytes", "object"],
    )
    def test_unstorable_state_is_refused_and_nothing_written(self, cp: Any, bad: Any) -> None:
        """What JSON cannot return exactly raises UnstorableState naming it; the latest checkpoint stays."""
        if self.stores:
            cp.save_checkpoint("t", 1, {"ok": True})
        with pytest.raises(UnstorableState, match="state_dump"):
            cp.save_checkpoint("t", 2, bad)
        with pytest.raises(UnstorableState, match="tree_state"):
            cp.save_checkpoint("t", 2, {}, tree_state=bad)
        with pytest.raises(UnstorableState, match="runtime_metadata"):
            cp.save_checkpoint("t", 2, {}, runtime_metadata=bad)
        if self.stores:
            assert [c["step"] for c in cp.list_checkpoints("t")] == [1]
            assert cp.get_checkpoint("t")["state_dump"] == {"ok": True}
            cp.save_checkpoint("t", 2, {"ok": 2})  # the failed saves left no trace
            assert cp.get_checkpoint("t")["step"] == 2

    def test_too_deep_state_is_refused_and_nothing_written(self, cp: Any) -> None:
        """State nested deeper than MAX_DEPTH raises UnstorableState (not RecursionError); nothing is written."""
        from ctxcore.kit.checkpoints import MAX_DEPTH

        for depth in (MAX_DEPTH + 1, 100_000):
            deep: Any = []
            for _ in range(depth):
                deep = [deep]
            with pytest.raises(UnstorableState, match="deep"):
                cp.save_checkpoint("t", 1, {"deep": deep})
        assert cp.list_threads() == []

    def test_deepest_storable_state_reads_back_from_a_deep_call_stack(self, cp: Any) -> None:
        """What save accepts, get_checkpoint returns, even when called from deep inside an application."""
        from ctxcore.kit.checkpoints import MAX_DEPTH

        self._needs_storage()
        deep: Any = "leaf"
        for _ in range(MAX_DEPTH - 1):
            deep = [deep]
        cp.save_checkpoint("t", 1, deep)

        def read_from_depth(frames: int) -> Any:
            return cp.get_checkpoint("t") if frames == 0 else read_from_depth(frames - 1)

        assert read_from_depth(300)["state_dump"] == deep

    def test_lone_surrogate_thread_id_is_refused(self, cp: Any) -> None:
        """A thread id with a lone surrogate cannot be stored; nothing is written."""
        with pytest.raises(UnstorableState):
            cp.save_checkpoint("t\ud800", 1, {})
        assert cp.list_threads() == []

    def test_nul_thread_id_is_refused_on_every_backend(self, cp: Any) -> None:
        """A thread id holding NUL is refused the same way everywhere (PostgreSQL text cannot hold it); nothing written."""
        with pytest.raises(UnstorableState, match="NUL"):
            cp.save_checkpoint("t\x00x", 1, {})
        for call in (cp.get_checkpoint, cp.list_checkpoints, cp.delete_thread):
            with pytest.raises(UnstorableState, match="NUL"):
                call("t\x00x")
        assert cp.list_threads() == []

    def test_odd_thread_ids_round_trip(self, cp: Any) -> None:
        """Quotes, SQL, path and percent characters, non-BMP text: thread ids are data, stored and listed exactly."""
        self._needs_storage()
        threads = ["x' OR '1'='1", "a\"; DROP TABLE ctx_checkpoints; --", "../../etc/passwd", "%00%2F", "😀 東京", "%h" + "0" * 64]
        for i, thread in enumerate(threads):
            cp.save_checkpoint(thread, 1, {"i": i})
        assert cp.list_threads() == sorted(threads)
        for i, thread in enumerate(threads):
            assert cp.get_checkpoint(thread)["state_dump"] == {"i": i}
            assert cp.get_checkpoint(thread)["thread_id"] == thread

    # ------------------------------------------------------------ delete and prune
    def test_delete_thread_removes_only_that_thread(self, cp: Any) -> None:
        """delete_thread forgets the thread (which then starts over at any step); others stay."""
        self._needs_storage()
        cp.save_checkpoint("a", 7, {"v": "a"})
        cp.save_checkpoint("b", 1, {"v": "b"})
        cp.delete_thread("a")
        assert cp.get_checkpoint("a") is None and cp.list_checkpoints("a") == []
        assert cp.list_threads() == ["b"]
        cp.save_checkpoint("a", 0, {"v": "new"})
        assert cp.get_checkpoint("a")["state_dump"] == {"v": "new"}

    def test_prune_keeps_the_newest(self, cp: Any) -> None:
        """prune(keep_last=N) keeps the newest N checkpoints and returns how many it removed."""
        self._needs_storage()
        for step in range(1, 8):
            cp.save_checkpoint("t", step, {"s": step})
        cp.save_checkpoint("other", 1, {})
        assert cp.prune("t", keep_last=3) == 4
        assert [c["step"] for c in cp.list_checkpoints("t")] == [5, 6, 7]
        assert cp.prune("t", keep_last=3) == 0
        assert cp.prune("t", keep_last=10) == 0
        assert cp.get_checkpoint("t")["state_dump"] == {"s": 7}
        assert [c["step"] for c in cp.list_checkpoints("other")] == [1]
        cp.save_checkpoint("t", 8, {"s": 8})
        with pytest.raises(StaleWrite):
            cp.save_checkpoint("t", 4, {})
        assert [c["step"] for c in cp.list_checkpoints("t")] == [5, 6, 7, 8]

    def test_prune_needs_a_positive_keep_last(self, cp: Any) -> None:
        """keep_last below 1 is refused (delete_thread removes everything)."""
        with pytest.raises(ValueError, match="delete_thread"):
            cp.prune("t", keep_last=0)

    # ------------------------------------------------------------ persistence and async
    def test_survives_reopening(self, cp: Any, location: Any) -> None:
        """A new instance on the same location sees every checkpoint saved by the first."""
        self._needs_storage()
        if not self.persistent:
            pytest.skip("this backend does not persist")
        cp.save_checkpoint("t", 1, TRICKY_STATE)
        cp.save_checkpoint("t", 2, {"second": True})
        other = self.make_checkpointer(location)
        try:
            assert same_json(other.get_checkpoint("t")["state_dump"], {"second": True})
            assert same_json(other.list_checkpoints("t")[0]["state_dump"], TRICKY_STATE)
            with pytest.raises(StaleWrite):
                other.save_checkpoint("t", 2, {})
            other.save_checkpoint("t", 3, {})
            assert cp.get_checkpoint("t")["step"] == 3
        finally:
            close = getattr(other, "close", None)
            if callable(close):
                close()

    def test_async_variants(self, cp: Any) -> None:
        """Every async variant does what its sync form does."""

        async def run() -> None:
            await cp.asave_checkpoint("t", 1, {"a": 1})
            await cp.asave_checkpoint("t", 2, {"a": 2}, {"tree": 1}, {"meta": 1})
            if not self.stores:
                assert await cp.aget_checkpoint("t") is None
                return
            got = await cp.aget_checkpoint("t")
            assert got["state_dump"] == {"a": 2} and got["tree_state"] == {"tree": 1}
            assert await cp.alist_threads() == ["t"]
            assert [c["step"] for c in await cp.alist_checkpoints("t")] == [1, 2]
            with pytest.raises(StaleWrite):
                await cp.asave_checkpoint("t", 2, {})
            assert await cp.aprune("t", 1) == 1
            await cp.adelete_thread("t")
            assert await cp.aget_checkpoint("t") is None

        asyncio.run(run())

    def test_saved_state_is_not_aliased(self, cp: Any) -> None:
        """Saving never mutates the caller's objects."""
        state = {"messages": [{"content": "x"}]}
        before = copy.deepcopy(state)
        cp.save_checkpoint("t", 1, state, tree_state=state, runtime_metadata=state)
        assert state == before
