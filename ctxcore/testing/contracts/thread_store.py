"""``ThreadStoreContract``: the checks every thread store (message log) must pass.

Subclass it in a test module, name the subclass ``Test...`` and implement
:meth:`ThreadStoreContract.make_store`; pytest collects every check::

    from ctxcore.testing.contracts import ThreadStoreContract

    class TestMyStore(ThreadStoreContract):
        def make_store(self, location):
            return MyStore(location / "threads.db")

        def damage_step(self, location, thread_id, step):   # optional: damaged-store checks
            ...  # flip bytes of the stored step record / its messages

        def tear_tail(self, location, thread_id):          # optional: torn-write checks
            ...  # leave what a write killed half-way leaves

``location`` is ``tmp_path`` unless the subclass overrides the ``location``
fixture. Two stores made on one location reach the same data when
``persistent`` is true; set ``multiprocess = False`` for an in-process store
(the fork-based checks are then skipped).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore.errors import CheckpointCorrupt, StaleWrite, UnstorableState
from ctxcore.kit.threadlog import StepRecord, ThreadStore, UnknownStep
from ctxcore.testing.contracts._log_processes import log_concurrent_writers, log_crash_loop
from ctxcore.testing.contracts.base import Contract
from ctxcore.testing.contracts.checkpointer import json_values, same_json

__all__ = ["ThreadStoreContract", "sample_message"]


def sample_message(i: int, text: str = "") -> dict[str, Any]:
    """A stored message (the JSON dump of a ctxcore message) numbered ``i``."""
    return {"id": f"m{i:04d}", "role": "user" if i % 2 == 0 else "assistant", "content": text or f"message {i}", "metadata": {}}


TRICKY: list[dict[str, Any]] = [
    {"role": "user", "content": "nul:\x00 end", "metadata": {"k": 2**70, "z": -0.0}},
    {"role": "assistant", "content": "emoji 😀 𝄞 and 中文 \u2028\u2029", "metadata": {"": [None, True, 1.5]}},
    {"role": "tool", "content": '"}\n{"crc":"00000000"', "tool_call_id": "call_1", "metadata": {}},
]


class ThreadStoreContract(Contract):
    """Checks every thread store must pass; subclasses implement :meth:`make_store`."""

    __contract__ = True

    #: a second store on the same location sees what the first wrote.
    persistent: bool = True
    #: the store can be opened and written by several processes (fork-based checks).
    multiprocess: bool = True
    #: SIGKILL rounds of the crash check.
    kills: int = 40
    #: examples per property-based check.
    max_examples: int = 20

    def make_store(self, location: Any) -> Any:  # pragma: no cover - subclasses implement
        raise NotImplementedError

    def damage_step(self, location: Any, thread_id: str, step: int) -> None:
        """Damage what ``append`` acknowledged for ``step`` (a record or one of its messages); optional."""
        raise NotImplementedError

    def tear_tail(self, location: Any, thread_id: str) -> None:
        """Leave what an append killed half-way leaves (an unterminated write); optional."""
        raise NotImplementedError

    @pytest.fixture
    def location(self, tmp_path: Any) -> Any:
        """Where the store keeps its data; override for server backends."""
        return tmp_path

    @pytest.fixture
    def store(self, location: Any) -> Iterator[Any]:
        """A fresh store on ``location``, closed afterwards."""
        made = self.make_store(location)
        yield made
        made.close()

    def _fill(self, store: Any, thread: str = "t", turns: tuple[int, ...] = (2, 3, 1)) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        step = None
        for n in turns:
            new = [sample_message(len(messages) + i) for i in range(n)]
            step = store.append(thread, new, expected_step=step, metadata={"turn": step}).step
            messages.extend(new)
        return messages

    def _reopen(self, location: Any) -> Any:
        if not self.persistent:
            pytest.skip("this store keeps nothing across instances")
        return self.make_store(location)

    # ------------------------------------------------------------ shape and round trip
    def test_satisfies_the_protocol(self, store: Any) -> None:
        """The store has every ThreadStore method."""
        assert isinstance(store, ThreadStore)

    def test_empty_store_reads_empty(self, store: Any) -> None:
        """An unknown thread reads as None with no steps; deleting or pruning it is a no-op."""
        assert store.read("nobody") is None
        assert store.list_steps("nobody") == []
        assert store.list_threads() == []
        assert store.salvage("nobody") is None
        store.delete_thread("nobody")
        assert store.prune("nobody", keep_last=1) == 0

    def test_append_then_read_round_trips(self, store: Any) -> None:
        """Appended messages come back exactly, with the step record the append returned."""
        record = store.append("t", TRICKY, expected_step=None, metadata={"model": "m", "n": 2**64})
        assert isinstance(record, StepRecord)
        assert (record.thread_id, record.step, record.messages) == ("t", 0, 3)
        assert record.created_at.endswith("+00:00")
        snap = store.read("t")
        assert snap.record == record
        assert all(same_json(a, b) for a, b in zip(snap.messages, TRICKY, strict=True))
        assert same_json(snap.record.metadata, {"model": "m", "n": 2**64})

    def test_steps_count_into_one_log(self, store: Any) -> None:
        """Each append adds one step numbered after the last; a step's count is the log length at that time."""
        messages = self._fill(store)
        steps = store.list_steps("t")
        assert [(r.step, r.messages) for r in steps] == [(0, 2), (1, 5), (2, 6)]
        assert [r.metadata for r in steps] == [{"turn": None}, {"turn": 0}, {"turn": 1}]
        assert store.read("t").messages == messages
        assert store.list_threads() == ["t"]

    def test_a_step_may_add_no_message(self, store: Any) -> None:
        """An append with no messages records a step with the same count (e.g. metadata only)."""
        self._fill(store, turns=(2,))
        record = store.append("t", [], expected_step=0, metadata={"note": "checkpoint"})
        assert (record.step, record.messages) == (1, 2)
        assert len(store.read("t").messages) == 2

    def test_first_step_sets_a_new_threads_numbering(self, store: Any) -> None:
        """first_step numbers a new thread's first step (a converted thread continues its old numbering)."""
        assert store.append("t", [sample_message(0)], expected_step=None, first_step=7).step == 7
        assert store.append("t", [sample_message(1)], expected_step=7, first_step=99).step == 8

    def test_returned_values_are_copies(self, store: Any) -> None:
        """Changing an appended or a returned message does not change what is stored."""
        message = sample_message(0)
        store.append("t", [message], expected_step=None)
        message["content"] = "changed"
        got = store.read("t").messages
        got[0]["content"] = "changed too"
        assert store.read("t").messages == [sample_message(0)]

    def test_any_json_message_round_trips(self, store: Any) -> None:
        """Property: any JSON values inside messages and metadata come back identical."""
        counter = iter(range(10**9))

        @settings(max_examples=self.max_examples, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.lists(st.dictionaries(st.text(max_size=6), json_values(max_leaves=6), max_size=3), max_size=4), json_values(max_leaves=4))
        def check(messages: list[dict[str, Any]], meta: Any) -> None:
            thread = f"prop-{next(counter)}"
            store.append(thread, messages, expected_step=None, metadata={"m": meta})
            snap = store.read(thread)
            assert len(snap.messages) == len(messages)
            assert all(same_json(a, b) for a, b in zip(snap.messages, messages, strict=True))
            assert same_json(snap.record.metadata, {"m": meta})

        check()

    def test_threads_are_isolated_and_ids_are_data(self, store: Any) -> None:
        """Odd thread ids (quotes, SQL, paths, non-BMP) are stored exactly and never mix."""
        threads = ["b", "a", "x' OR '1'='1", "../../etc/passwd", "%00%2F", "😀 東京", "x" * 300]
        for i, thread in enumerate(threads):
            store.append(thread, [sample_message(i)], expected_step=None)
        assert store.list_threads() == sorted(threads)
        for i, thread in enumerate(threads):
            assert store.read(thread).messages == [sample_message(i)]

    def test_reopened_store_reads_the_same(self, store: Any, location: Any) -> None:
        """A second store on the same location reads every step and can continue the thread."""
        messages = self._fill(store)
        other = self._reopen(location)
        try:
            assert other.read("t").messages == messages
            assert [r.step for r in other.list_steps("t")] == [0, 1, 2]
            other.append("t", [sample_message(6)], expected_step=2)
        finally:
            other.close()
        assert store.read("t").record.step == 3

    # ------------------------------------------------------------ time travel, fork, retention
    def test_read_as_of_any_step(self, store: Any) -> None:
        """read(thread, step=N) returns the thread exactly as step N saved it."""
        messages = self._fill(store)
        assert store.read("t", step=0).messages == messages[:2]
        assert store.read("t", step=1).messages == messages[:5]
        assert store.read("t", step=2).messages == messages
        assert store.read("t", step=1).record.step == 1

    def test_unknown_step_is_refused(self, store: Any) -> None:
        """Reading a step that was never written raises UnknownStep naming the thread and step."""
        self._fill(store)
        with pytest.raises(UnknownStep, match="'t'.*7"):
            store.read("t", step=7)

    def test_fork_copies_a_step_into_a_new_thread(self, store: Any) -> None:
        """A fork holds the source's messages as of the step; both continue independently."""
        messages = self._fill(store)
        record = store.fork("t", "t2", step=1)
        assert (record.thread_id, record.messages) == ("t2", 5)
        assert store.read("t2").messages == messages[:5]
        store.append("t2", [sample_message(99)], expected_step=record.step)
        assert store.read("t").messages == messages
        assert store.read("t2").messages == [*messages[:5], sample_message(99)]
        assert store.list_threads() == ["t", "t2"]

    def test_fork_onto_an_existing_thread_is_stale(self, store: Any) -> None:
        """Forking into an id that already has steps raises StaleWrite and changes nothing."""
        self._fill(store)
        store.append("u", [sample_message(0)], expected_step=None)
        with pytest.raises(StaleWrite):
            store.fork("t", "u")
        assert store.read("u").messages == [sample_message(0)]

    def test_prune_keeps_the_newest_step_records(self, store: Any) -> None:
        """prune keeps the last N step records; the latest still reads whole, pruned steps are unknown."""
        messages = self._fill(store, turns=(1, 1, 1, 1))
        assert store.prune("t", keep_last=2) == 2
        assert [r.step for r in store.list_steps("t")] == [2, 3]
        assert store.read("t").messages == messages
        assert store.read("t", step=2).messages == messages[:3]
        with pytest.raises(UnknownStep):
            store.read("t", step=0)
        with pytest.raises(ValueError):
            store.prune("t", keep_last=0)

    def test_expire_deletes_idle_threads(self, store: Any) -> None:
        """expire deletes threads whose latest step is older than the cutoff, and only those."""
        self._fill(store, "old")
        latest = datetime.fromisoformat(store.read("old").record.created_at)
        assert store.expire("2000-01-01T00:00:00.000000+00:00") == []
        self._fill(store, "new")
        cutoff = (latest + timedelta(microseconds=1)).isoformat(timespec="microseconds")
        assert store.expire(cutoff) in (["old"], ["new", "old"])  # "new" may share old's microsecond
        assert "old" not in store.list_threads()
        assert store.read("old") is None

    def test_delete_thread(self, store: Any) -> None:
        """delete_thread removes the log and the steps; the id can start again from nothing."""
        self._fill(store)
        store.delete_thread("t")
        assert store.read("t") is None and store.list_steps("t") == [] and store.list_threads() == []
        assert store.append("t", [sample_message(0)], expected_step=None).step == 0

    # ------------------------------------------------------------ fencing and bad input
    def test_stale_expected_step_writes_nothing(self, store: Any) -> None:
        """An append whose expected step is not the latest raises StaleWrite and writes nothing."""
        messages = self._fill(store)
        for expected in (None, 0, 1, 3):
            with pytest.raises(StaleWrite, match="'t'"):
                store.append("t", [sample_message(50)], expected_step=expected)
        assert store.read("t").messages == messages
        assert [r.step for r in store.list_steps("t")] == [0, 1, 2]

    def test_expected_step_on_an_unknown_thread_is_stale(self, store: Any) -> None:
        """Expecting a step of a thread that has none (deleted or expired meanwhile) is stale."""
        with pytest.raises(StaleWrite):
            store.append("t", [sample_message(0)], expected_step=0)
        assert store.list_threads() == []

    @pytest.mark.parametrize(
        "bad",
        [{"content": "lone \ud800"}, {"content": float("nan")}, {1: "int key"}, {"t": (1, 2)}, {"o": object()}],
        ids=["lone-surrogate", "nan", "int-key", "tuple", "object"],
    )
    def test_unstorable_messages_are_refused_whole(self, store: Any, bad: Any) -> None:
        """A turn with one unstorable message or metadata raises UnstorableState; no message of it is written."""
        self._fill(store, turns=(1,))
        with pytest.raises(UnstorableState, match=r"messages\[1\]"):
            store.append("t", [sample_message(1), bad], expected_step=0)
        with pytest.raises(UnstorableState, match="metadata"):
            store.append("t", [sample_message(1)], expected_step=0, metadata=bad)
        assert store.read("t").messages == [sample_message(0)]
        assert store.append("t", [sample_message(1)], expected_step=0).step == 1

    def test_bad_arguments_are_refused(self, store: Any) -> None:
        """Thread ids must be non-empty strings without NUL; steps ints >= 0; messages dicts."""
        for thread in ("", None, "x" * 513, "a\x00b"):
            with pytest.raises((TypeError, ValueError)):
                store.append(thread, [], expected_step=None)
        for step in (-1, True, "1", 1.0):
            with pytest.raises((TypeError, ValueError)):
                store.append("t", [], expected_step=step)
        with pytest.raises(TypeError):
            store.append("t", ["not a dict"], expected_step=None)
        assert store.list_threads() == []

    # ------------------------------------------------------------ damage
    def _damaged(self, store: Any, location: Any) -> list[dict[str, Any]]:
        messages = self._fill(store)
        try:
            self.damage_step(location, "t", 1)
        except NotImplementedError:
            pytest.skip("this store has no damage_step")
        return messages

    def test_damaged_acknowledged_step_is_loud(self, store: Any, location: Any) -> None:
        """Damage to an acknowledged step raises CheckpointCorrupt naming the thread, a step and the repair."""
        self._damaged(store, location)
        reader = self._reopen(location)
        try:
            with pytest.raises(CheckpointCorrupt, match=r"'t'.*step.*--repair"):
                reader.read("t")
        finally:
            reader.close()

    def test_salvage_returns_the_readable_part(self, store: Any, location: Any) -> None:
        """After damage, salvage returns the newest intact step (before the damage) without raising."""
        messages = self._damaged(store, location)
        reader = self._reopen(location)
        try:
            snap = reader.salvage("t")
        finally:
            reader.close()
        assert snap is not None and snap.record.step == 0
        assert snap.messages == messages[:2]

    def test_torn_tail_is_dropped(self, store: Any, location: Any) -> None:
        """A write that never returned is dropped: the last acknowledged step reads, and the next append works."""
        messages = self._fill(store)
        try:
            self.tear_tail(location, "t")
        except NotImplementedError:
            pytest.skip("this store has no tear_tail")
        reader = self._reopen(location)
        try:
            assert reader.read("t").messages == messages
            reader.append("t", [sample_message(6)], expected_step=2)
            assert reader.read("t").messages == [*messages, sample_message(6)]
        finally:
            reader.close()

    # ------------------------------------------------------------ real processes
    def _make(self, location: Any) -> Any:
        if not self.multiprocess:
            pytest.skip("this store lives in one process")
        return lambda: self.make_store(location)

    def test_concurrent_writers_lose_nothing(self, location: Any) -> None:
        """Eight processes appending to one thread: nothing lost, duplicated or reordered; steps unbroken."""
        report = log_concurrent_writers(self._make(location), processes=8, writes=8)
        assert report.appended == 64 and report.steps == 64

    def test_sigkill_during_append_loses_no_acknowledged_step(self, location: Any) -> None:
        """A child SIGKILLed at random moments never loses an acknowledged step nor shows a partial one."""
        report = log_crash_loop(self._make(location), kills=self.kills, seed=11)
        assert report.kills == self.kills
        assert report.acknowledged > 0
