"""CheckpointerSession: the SDK's Session protocol on real ctxcore thread stores (SQLite file, PostgreSQL, memory).

Also: add_items appends to the log (never rewrites it), pop_item leaves the log
as it was (a step view), sessions stored by older versions as whole checkpoints
open and move to the log, two worker processes writing one session (none of
their items lost or reordered), a worker SIGKILLed mid-run (every acknowledged
item survives, the session stays readable), and a hypothesis model check of
add/pop/get/clear.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from agents.memory import Session, SessionSettings
from ctxcore_openai_agents import CheckpointerSession, messages_from_items
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import CheckpointCorrupt, Pipeline, StaleWrite, Thread
from ctxcore.kit import stored_dump
from ctxcore.testing.harness.postgres import pg_dsn  # noqa: F401  (the session fixture)

WORKER = Path(__file__).with_name("session_worker.py")
EXAMPLES = 1000 if os.environ.get("CTXCORE_THOROUGH") == "1" else 60


def pipeline_yaml(checkpointer: str) -> str:
    return f"""
version: 1
model: {{context_window: 4000}}
providers: [{{type: history}}]
filters: [{{type: token_budget}}]
checkpointer: {checkpointer}
"""


def turn(tag: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": tag},
            {"type": "reasoning", "id": f"rs_{tag}", "summary": []},
            {"type": "function_call", "call_id": f"call-{tag}", "name": "lookup", "arguments": '{"q": "é"}', "id": f"fc_{tag}"},
            {"type": "function_call_output", "call_id": f"call-{tag}", "output": f"result {tag} ✓"},
            {"type": "message", "id": f"msg_{tag}", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": f"answer {tag}", "annotations": []}]}]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


class Protocol:
    """The Session protocol's behaviour; subclasses give a checkpointer."""

    def pipeline(self, tmp_path: Path) -> Pipeline:
        raise NotImplementedError

    def test_is_an_sdk_session(self, tmp_path: Path) -> None:
        """The SDK recognises it as a Session (its runtime-checkable protocol)."""
        assert isinstance(CheckpointerSession.from_pipeline(self.pipeline(tmp_path), "s"), Session)

    def test_add_get_limit_pop_clear(self, tmp_path: Path) -> None:
        """Items come back in order and unchanged; limit gives the newest; pop removes the newest; clear empties."""
        session = CheckpointerSession.from_pipeline(self.pipeline(tmp_path), f"s-{uuid.uuid4().hex[:8]}")
        first, second = turn("a"), turn("b")
        run(session.add_items(first[:3]))  # the assistant turn arrives in two writes: regrouped, not split
        run(session.add_items(first[3:] + second))
        assert run(session.get_items()) == first + second
        assert run(session.get_items(limit=2)) == second[-2:]
        assert run(session.get_items(limit=0)) == []
        assert run(session.pop_item()) == second[-1]
        assert run(session.pop_item()) == second[-2]
        assert run(session.get_items()) == first + second[:3]
        run(session.clear_session())
        assert run(session.get_items()) == [] and run(session.pop_item()) is None

    def test_persists_across_objects_and_reads_as_a_thread(self, tmp_path: Path) -> None:
        """A new session object (a restart) reads what the first wrote; pipeline.thread() opens it as ctxcore messages."""
        pipeline = self.pipeline(tmp_path)
        sid = f"s-{uuid.uuid4().hex[:8]}"
        run(CheckpointerSession.from_pipeline(pipeline, sid).add_items(turn("a")))
        again = CheckpointerSession.from_pipeline(self.pipeline(tmp_path), sid)
        assert run(again.get_items()) == turn("a")
        assert [m.role for m in pipeline.thread(sid).messages] == ["user", "assistant", "tool", "assistant"]

    def test_settings_limit_and_old_steps_pruned(self, tmp_path: Path) -> None:
        """SessionSettings(limit=) is the default limit; only keep_steps step records stay stored."""
        pipeline = self.pipeline(tmp_path)
        sid = f"s-{uuid.uuid4().hex[:8]}"
        session = CheckpointerSession.from_pipeline(pipeline, sid, session_settings=SessionSettings(limit=3), keep_steps=2)
        for tag in "abcd":
            run(session.add_items(turn(tag)))
        assert run(session.get_items()) == turn("d")[-3:]
        assert len(run(session.get_items(limit=100))) == 20
        assert len(pipeline.thread_store().list_steps(sid)) == 2

    def test_add_appends_and_pop_keeps_the_log(self, tmp_path: Path) -> None:
        """Each add_items appends only its new messages; pop_item appends nothing but a view, and older steps read as before."""
        pipeline = self.pipeline(tmp_path)
        sid = f"s-{uuid.uuid4().hex[:8]}"
        session, store = CheckpointerSession.from_pipeline(pipeline, sid), pipeline.thread_store()
        for k, tag in enumerate("abc"):
            run(session.add_items(turn(tag)))
            assert store.read(sid).record.messages == 4 * (k + 1)  # user, assistant, tool, assistant per turn
        before = [m.text for m in pipeline.thread(sid).messages]
        assert run(session.pop_item()) == turn("c")[-1]
        assert store.read(sid).record.messages == 12  # nothing appended: the last message is left out of the view
        assert [m.text for m in pipeline.thread(sid).messages] == before[:-1]
        assert [m.text for m in pipeline.thread(sid, step=2).messages] == before
        run(session.add_items(turn("d")))
        assert run(CheckpointerSession.from_pipeline(self.pipeline(tmp_path), sid).get_items()) == turn("a") + turn("b") + turn("c")[:-1] + turn("d")

    def test_the_log_holds_the_compact_stored_form(self, tmp_path: Path) -> None:
        """add_items stores each message as a Thread does (no role defaults), so a session's log is no larger than a thread's."""
        pipeline = self.pipeline(tmp_path)
        sid = f"s-{uuid.uuid4().hex[:8]}"
        run(CheckpointerSession.from_pipeline(pipeline, sid).add_items(turn("a")))
        stored = pipeline.thread_store().read(sid).messages
        assert stored == [stored_dump(m) for m in pipeline.thread(sid).messages]
        assert all("priority" not in d and "zone" not in d for d in stored)

    def test_an_old_format_session_opens_and_moves_to_the_log(self, tmp_path: Path) -> None:
        """A session stored as whole checkpoints by older versions reads back; its first write puts it in the log as the next step."""
        pipeline = self.pipeline(tmp_path)
        sid = f"s-{uuid.uuid4().hex[:8]}"
        dumps = [m.model_dump(mode="json") for m in messages_from_items(turn("a"))]
        pipeline.thread_checkpointer().save_checkpoint(sid, 3, {"messages": dumps}, None, {"format": Thread.FORMAT})
        session = CheckpointerSession.from_pipeline(pipeline, sid)
        assert run(session.get_items()) == turn("a")
        run(session.add_items(turn("b")))
        assert [r.step for r in pipeline.thread_store().list_steps(sid)] == [4]
        assert run(CheckpointerSession.from_pipeline(self.pipeline(tmp_path), sid).get_items()) == turn("a") + turn("b")
        run(session.clear_session())
        assert run(CheckpointerSession.from_pipeline(self.pipeline(tmp_path), sid).get_items()) == []


class TestSqlite(Protocol):
    def pipeline(self, tmp_path: Path) -> Pipeline:
        return Pipeline.from_string(pipeline_yaml(f"{{type: sqlite, path: '{tmp_path / 'sessions.db'}'}}"))

    def test_a_foreign_checkpoint_is_refused(self, tmp_path: Path) -> None:
        """A thread id holding a checkpoint of another format raises CheckpointCorrupt naming the session."""
        pipeline = self.pipeline(tmp_path)
        pipeline.thread_checkpointer().save_checkpoint("other", 0, {"x": 1}, None, {})
        with pytest.raises(CheckpointCorrupt, match="session 'other'"):
            run(CheckpointerSession.from_pipeline(pipeline, "other").get_items())

    def test_a_killed_worker_loses_no_acknowledged_item(self, tmp_path: Path) -> None:
        """SIGKILL during a run of writes: every item acknowledged before the kill is stored, and the session reads whole."""
        yaml_path = tmp_path / "p.yaml"
        yaml_path.write_text(pipeline_yaml(f"{{type: sqlite, path: '{tmp_path / 'sessions.db'}'}}"))
        go = tmp_path / "go"
        go.touch()
        proc = subprocess.Popen([sys.executable, str(WORKER), str(yaml_path), "k", "w", "100000", str(go)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        acked = [proc.stdout.readline().split()[1] for _ in range(15)]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        items = run(CheckpointerSession.from_pipeline(Pipeline.from_yaml(yaml_path), "k").get_items())
        users = [i["content"] for i in items if i.get("role") == "user"]
        assert users[:len(acked)] == acked and users == [f"w-{i}" for i in range(len(users))]
        assert len(items) == 3 * len(users)


class TestMemory(Protocol):
    def pipeline(self, tmp_path: Path) -> Pipeline:
        if not hasattr(self, "_pipeline"):
            self._pipeline = Pipeline.from_string(pipeline_yaml("{type: memory}"))
        return self._pipeline

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(st.one_of(st.tuples(st.just("add"), st.integers(1, 5)), st.just(("pop", 0))), max_size=12))
    def test_behaves_like_a_list(self, ops: list[tuple[str, int]]) -> None:
        """Any sequence of add_items (chunks cut anywhere in a turn) and pop_item leaves what a plain list would hold."""
        session = CheckpointerSession("prop", Pipeline.from_string(pipeline_yaml("{type: memory}")).thread_store())
        source = [item for k in range(20) for item in turn(str(k))]
        model: list[Any] = []
        for op, n in ops:
            if op == "add":
                chunk, source = source[:n], source[n:]
                run(session.add_items(chunk))
                model += chunk
            else:
                assert run(session.pop_item()) == (model.pop() if model else None)
        assert run(session.get_items()) == model


class TestPostgres(Protocol):
    @pytest.fixture(autouse=True)
    def _dsn(self, pg_dsn: str) -> None:  # noqa: F811
        self.dsn = pg_dsn
        self.schema = f"ctx_agents_{uuid.uuid4().hex[:10]}"

    def yaml(self) -> str:
        return pipeline_yaml(f"{{type: postgres, dsn: '{self.dsn}', schema: {self.schema}}}")

    def pipeline(self, tmp_path: Path) -> Pipeline:
        return Pipeline.from_string(self.yaml())

    def test_two_processes_share_a_session(self, tmp_path: Path) -> None:
        """Two worker processes add turns to one PostgreSQL session at once: none lost or doubled, each in its order."""
        yaml_path = tmp_path / "p.yaml"
        yaml_path.write_text(self.yaml())
        go, turns = tmp_path / "go", 12
        procs = [subprocess.Popen([sys.executable, str(WORKER), str(yaml_path), "shared", name, str(turns), str(go)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in "ab"]
        time.sleep(0.5)
        go.touch()
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
        items = run(CheckpointerSession.from_pipeline(Pipeline.from_yaml(yaml_path), "shared").get_items())
        users = [i["content"] for i in items if i.get("role") == "user"]
        assert sorted(users) == sorted(f"{n}-{i}" for n in "ab" for i in range(turns))
        for name in "ab":
            assert [u for u in users if u[0] == name] == [f"{name}-{i}" for i in range(turns)]
        for k in range(0, len(items), 3):  # each worker's turn stayed whole
            assert items[k + 1]["call_id"] == items[k + 2]["call_id"] == f"call-{items[k]['content']}"


def test_stale_writes_are_retried_then_reported(tmp_path: Path) -> None:
    """A thread store that always reports a newer writer makes add_items raise StaleWrite after the retries, naming the session."""
    real = Pipeline.from_string(pipeline_yaml("{type: memory}")).thread_store()

    class AlwaysStale:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def append(self, *args: Any, **kwargs: Any) -> None:
            raise StaleWrite("a newer step exists")

    session = CheckpointerSession("busy", AlwaysStale(), retries=3)
    with pytest.raises(StaleWrite, match="session 'busy': 4 writes in a row"):
        run(session.add_items(turn("a")))


def test_a_checkpointer_is_not_a_thread_store() -> None:
    """Giving a plain checkpointer where a thread store belongs raises TypeError naming the way to build one."""
    checkpointer = Pipeline.from_string(pipeline_yaml("{type: memory}")).thread_checkpointer()
    with pytest.raises(TypeError, match="from_pipeline"):
        CheckpointerSession("s", checkpointer)


def test_session_bench_smoke() -> None:
    """bench/integration_openai_agents_session.py runs on a small session and prints its table without writing the page."""
    root = Path(__file__).resolve().parents[4]
    before = (root / "docs" / "integrations.md").read_text(encoding="utf-8")
    out = subprocess.run([sys.executable, str(root / "bench" / "integration_openai_agents_session.py"), "--items", "48",
                          "--no-write"], capture_output=True, text=True, timeout=300, check=True)
    assert "ctxcore CheckpointerSession (sqlite)" in out.stdout and "Agents SDK SQLiteSession" in out.stdout
    assert (root / "docs" / "integrations.md").read_text(encoding="utf-8") == before
