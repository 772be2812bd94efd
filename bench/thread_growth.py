"""How a saved conversation grows: save time, store size and reopen time at 40 / 400 / 2,000 messages.

Usage: ``make bench`` (or ``.venv/bin/python bench/thread_growth.py [--quick] [--doc PATH] [--json PATH]``).

The turns of a coding agent, saved after every turn: a user message, an
assistant tool call, a ~1.5 KB tool result and an answer. In one process run:

- **ctxcore** ``Thread`` (``add_user`` / ``add_response`` / ``add_tool_result`` /
  ``save``) on every thread store installed: ``memory``, ``sqlite``, ``jsonl``,
  ``postgres`` (a throwaway cluster when PostgreSQL is installed), ``redis``
  (a throwaway ``redis-server`` when ctxcore-redis and the server are installed);
- the OpenAI Agents SDK ``SQLiteSession`` (``add_items`` per turn, ``get_items``
  to reopen) and LangGraph's ``SqliteSaver`` (a one-node ``StateGraph`` with an
  ``add_messages`` channel, ``invoke`` per turn, ``get_state`` to reopen), both
  on a SQLite file, as their users run them.

Measured at each size:

- ``save`` — the cost of saving one more turn at that length, by *probe saves*:
  the thread as saved at that length is copied into a new id (ctxcore:
  ``thread.fork(id, step=N)``; the peers, which cannot fork: the same items
  written to a new session/thread in one call), one turn is added and saved
  and timed (the ``add_*`` calls and ``save`` / ``add_items`` / ``invoke``),
  and the copy is deleted. The probes of all sizes are interleaved (round
  after round, each round in a rotated order), so a change in the machine's
  load hits every size alike; the median of the rounds, in wall-clock time
  and in this process's CPU time (``time.process_time``; a server's own work
  and fsync waits are not in it). The save goals compare wall-clock medians;
- ``size`` — the bytes on disk of the store at rest when the thread reaches that
  size (files closed; server stores: their tables' total relation size, redis:
  ``MEMORY USAGE`` of the store's keys);
- ``reopen`` — the fastest of nine cold reopens (a new store object / session /
  saver, then the whole conversation read back; the fastest, because on a
  shared machine a slower read measures the machine's other work; a garbage
  collection first, so one the earlier work left due does not land in a
  reopen), in wall-clock time and in CPU time, which the reopen goals compare.

Timings are from a shared machine: compare ratios from one run, not numbers
across runs. A progress bar is drawn on stderr when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from report_table import markdown_table, write_section  # noqa: E402

SIZES = (40, 400, 2000)
TOOL_RESULT = ("def handler(event):\n    return process(event['payload'])  # line of a file the agent read\n" * 20)[:1500]
SECTION = "thread_growth"
#: Cold reopens per size; the fastest counts (a read that other work on the machine slowed down says nothing about the store).
REOPENS = 9
#: Rounds of probe saves; each round probes every size once, the median of the rounds counts.
PROBE_ROUNDS = 15


def turn_items(i: int) -> list[dict[str, Any]]:
    """Turn ``i`` as OpenAI chat dicts: user, assistant tool call, tool result, answer."""
    call = f"call_{i:05d}"
    return [
        {"role": "user", "content": f"Step {i}: open src/module_{i}.py and tell me what the handler does."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/module_{i}.py"})}}]},
        {"role": "tool", "tool_call_id": call, "content": f"# src/module_{i}.py\n" + TOOL_RESULT},
        {"role": "assistant", "content": f"The handler in module {i} forwards the event payload to process()."},
    ]


def disk_bytes(path: Path) -> int:
    """Bytes of a file with its -wal/-shm/-journal siblings, or of every file under a directory."""
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


class Side:
    """One store under test: ``save_turn`` saves turn i; ``seed``/``probe``/``drop`` run a probe save; ``reopen`` reads back cold."""

    name = ""

    def save_turn(self, i: int) -> None:
        raise NotImplementedError

    def reached(self, size: int) -> None:
        """Called when the thread holds ``size`` messages (ctxcore: remember the step to fork from)."""

    def seed(self, probe_id: str, size: int) -> None:
        """Untimed: ``probe_id`` holds the thread as saved at ``size`` messages."""
        raise NotImplementedError

    def probe(self, probe_id: str, i: int) -> None:
        """Timed: add turn ``i`` to ``probe_id`` and save it."""
        raise NotImplementedError

    def drop(self, probe_id: str) -> None:
        """Untimed: delete ``probe_id``."""
        raise NotImplementedError

    def prepare_reopen(self) -> None:
        """Untimed set-up before a reopen (ctxcore: compiling a fresh pipeline)."""

    def reopen(self) -> int:
        raise NotImplementedError

    def size(self) -> int | None:
        return None

    def close(self) -> None:
        pass


def all_items(turns: int) -> list[dict[str, Any]]:
    """The first ``turns`` turns' items, in order."""
    return [item for i in range(turns) for item in turn_items(i)]


# ------------------------------------------------------------------ ctxcore
def _host() -> Any:
    import ctxcore_checkpointers.plugin
    import ctxcore_counters.plugin
    import ctxcore_providers.plugin

    from ctxcore.testing import fresh_host

    plugins: list[tuple[str, Any]] = [("p", ctxcore_providers.plugin), ("c", ctxcore_counters.plugin), ("k", ctxcore_checkpointers.plugin)]
    for dist, module in (("ctxcore-postgres", "ctxcore_postgres.plugin"), ("ctxcore-redis", "ctxcore_redis.plugin")):
        with contextlib.suppress(ImportError):
            plugins.append((dist, __import__(module, fromlist=["plugin"])))
    return fresh_host(*plugins)


PIPELINE = """version: 1
model: {context_window: 128000}
providers:
  - {type: static_prompt, text: You are a careful coding agent.}
  - {type: history}
threads: %s
"""


class CtxSide(Side):
    """A ctxcore Thread on one thread store."""

    def __init__(self, name: str, threads_yaml: str, host: Any, where: Path | None, size_fn: Callable[[], int] | None = None) -> None:
        from ctxcore import Pipeline

        self.name, self.yaml, self.host, self.where, self.size_fn = name, PIPELINE % threads_yaml, host, where, size_fn
        self.pipeline = Pipeline.from_string(self.yaml, host=host)
        self.thread = self.pipeline.thread("bench")
        self.json_bytes = 0
        self.steps: dict[int, int] = {}  # size -> the step at which the thread held that many messages
        self.probes: dict[str, Any] = {}

    @staticmethod
    def _turn(thread: Any, i: int) -> None:
        user, call, result, answer = turn_items(i)
        thread.add_user(user["content"])
        thread.add_response(call)
        thread.add_tool_result(result["tool_call_id"], result["content"])
        thread.add_response(answer)
        thread.save()

    def save_turn(self, i: int) -> None:
        from ctxcore.model.messages import Message

        self._turn(self.thread, i)
        self.json_bytes += sum(len(json.dumps(m.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")).encode())
                               for m in self.thread.messages[-4:] if isinstance(m, Message))

    def reached(self, size: int) -> None:
        self.steps[size] = int(self.thread.step)

    def seed(self, probe_id: str, size: int) -> None:
        self.probes[probe_id] = self.thread.fork(probe_id, step=self.steps[size])

    def probe(self, probe_id: str, i: int) -> None:
        self._turn(self.probes[probe_id], i)

    def drop(self, probe_id: str) -> None:
        del self.probes[probe_id]
        self.pipeline.thread_store().delete_thread(probe_id)

    def prepare_reopen(self) -> None:
        from ctxcore import Pipeline

        if self.where is None and self.size_fn is None:
            self.fresh = self.pipeline  # memory: only this pipeline's store holds the thread
            return
        self.fresh = Pipeline.from_string(self.yaml, host=self.host)
        self.fresh.builder()  # compiling the pipeline is not part of reopening a thread

    def reopen(self) -> int:
        """A fresh store (new connection) reads the whole thread into a Thread."""
        count = len(self.fresh.thread("bench").messages)
        if self.fresh is not self.pipeline:
            self.fresh.thread_store().close()
        return count

    def size(self) -> int | None:
        if self.size_fn is not None:
            return self.size_fn()
        return None if self.where is None else disk_bytes(self.where)

    def close(self) -> None:
        self.pipeline.thread_store().close()


# ------------------------------------------------------------------ peers
class AgentsSdkSide(Side):
    """OpenAI Agents SDK SQLiteSession on a file."""

    name = "Agents SDK SQLiteSession"

    def __init__(self, db: Path) -> None:
        from agents import SQLiteSession

        self.db, self.cls = db, SQLiteSession
        self.session = SQLiteSession("bench", str(db))
        self.loop = asyncio.new_event_loop()

        self.probes: dict[str, Any] = {}

    @staticmethod
    def items(i: int) -> list[dict[str, Any]]:
        """Turn ``i`` as Responses items, as the SDK stores a run's output."""
        user, call, result, answer = turn_items(i)
        tc = call["tool_calls"][0]
        return [
            {"role": "user", "content": user["content"]},
            {"type": "function_call", "call_id": tc["id"], "name": tc["function"]["name"], "arguments": tc["function"]["arguments"]},
            {"type": "function_call_output", "call_id": result["tool_call_id"], "output": result["content"]},
            {"role": "assistant", "content": answer["content"]},
        ]

    def save_turn(self, i: int) -> None:
        self.loop.run_until_complete(self.session.add_items(self.items(i)))  # type: ignore[arg-type]

    def seed(self, probe_id: str, size: int) -> None:
        session = self.probes[probe_id] = self.cls(probe_id, str(self.db))
        self.loop.run_until_complete(session.add_items([it for i in range(size // 4) for it in self.items(i)]))

    def probe(self, probe_id: str, i: int) -> None:
        self.loop.run_until_complete(self.probes[probe_id].add_items(self.items(i)))

    def drop(self, probe_id: str) -> None:
        session = self.probes.pop(probe_id)
        self.loop.run_until_complete(session.clear_session())
        session.close()

    def reopen(self) -> int:
        session = self.cls("bench", str(self.db))
        items = self.loop.run_until_complete(session.get_items())
        session.close()
        return len(items)

    def size(self) -> int | None:
        return disk_bytes(self.db)

    def close(self) -> None:
        self.session.close()
        self.loop.close()


class LangGraphSide(Side):
    """LangGraph SqliteSaver under a one-node graph with an add_messages channel."""

    name = "LangGraph SqliteSaver"

    def __init__(self, db: Path) -> None:
        self.db = db
        self.conn = sqlite3.connect(db, check_same_thread=False)
        self.graph = self._graph(self.conn)
        self.config = {"configurable": {"thread_id": "bench"}}

    @staticmethod
    def _graph(conn: sqlite3.Connection) -> Any:
        from typing import Annotated, TypedDict

        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import START, StateGraph
        from langgraph.graph.message import add_messages

        state = TypedDict("State", {"messages": Annotated[list, add_messages]})  # type: ignore[misc]  # noqa: UP013 (class syntax would be a string annotation under __future__)
        builder = StateGraph(state)
        builder.add_node("agent", lambda state: {})
        builder.add_edge(START, "agent")
        return builder.compile(checkpointer=SqliteSaver(conn))

    def save_turn(self, i: int) -> None:
        self.graph.invoke({"messages": turn_items(i)}, self.config)

    def seed(self, probe_id: str, size: int) -> None:
        self.graph.invoke({"messages": all_items(size // 4)}, {"configurable": {"thread_id": probe_id}})

    def probe(self, probe_id: str, i: int) -> None:
        self.graph.invoke({"messages": turn_items(i)}, {"configurable": {"thread_id": probe_id}})

    def drop(self, probe_id: str) -> None:
        self.graph.checkpointer.delete_thread(probe_id)

    def reopen(self) -> int:
        conn = sqlite3.connect(self.db, check_same_thread=False)
        try:
            return len(self._graph(conn).get_state(self.config).values["messages"])
        finally:
            conn.close()

    def size(self) -> int | None:
        return disk_bytes(self.db)

    def close(self) -> None:
        self.conn.close()


# ------------------------------------------------------------------ running
def measure(side: Side, sizes: tuple[int, ...], tick: Callable[[], None] = lambda: None) -> dict[int, dict[str, float | int | None]]:
    """Grow the thread to each size (its size at rest and cold reopens there), then the interleaved probe saves of every size."""
    out: dict[int, dict[str, float | int | None]] = {}
    turns = 0
    for size in sizes:
        while turns * 4 < size:
            side.save_turn(turns)
            turns += 1
            tick()
        side.reached(size)
        reopen_times, reopen_cpu = _reopens(side, turns * 4)
        out[size] = {"reopen_ms": min(reopen_times) * 1000, "reopen_cpu_ms": min(reopen_cpu) * 1000, "size_bytes": _size_at_rest(side)}
        if isinstance(side, CtxSide):
            out[size]["json_bytes"] = side.json_bytes
    for size, (wall, cpu) in probe_saves(side, sizes, tick).items():
        out[size].update(save_ms=statistics.median(wall) * 1000, save_cpu_ms=statistics.median(cpu) * 1000)
    return out


def _reopens(side: Side, expected: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``REOPENS`` cold reopens; each must read back ``expected`` messages."""
    wall, cpu = [], []
    for _ in range(REOPENS):
        side.prepare_reopen()
        gc.collect()
        start, cpu_start = time.perf_counter(), time.process_time()
        count = side.reopen()
        cpu.append(time.process_time() - cpu_start)
        wall.append(time.perf_counter() - start)
        if count != expected:
            raise AssertionError(f"{side.name}: reopened {count} messages, expected {expected}")
    return wall, cpu


def probe_saves(side: Side, sizes: tuple[int, ...], tick: Callable[[], None] = lambda: None,
                rounds: int = PROBE_ROUNDS) -> dict[int, tuple[list[float], list[float]]]:
    """Per size, the wall and CPU seconds of ``rounds`` probe saves: copy the thread at that size, save one turn, delete the copy.

    Round ``r`` probes the sizes rotated by ``r``, so no size is always first
    after the untimed copying, and load that comes and goes falls on all sizes.
    """
    times: dict[int, tuple[list[float], list[float]]] = {size: ([], []) for size in sizes}
    for r in range(rounds):
        for size in sizes[r % len(sizes):] + sizes[:r % len(sizes)]:
            probe_id = f"probe-{size}-{r}"
            side.seed(probe_id, size)
            gc.collect()
            start, cpu_start = time.perf_counter(), time.process_time()
            side.probe(probe_id, size // 4)
            times[size][1].append(time.process_time() - cpu_start)
            times[size][0].append(time.perf_counter() - start)
            side.drop(probe_id)
            tick()
    return times


def _size_at_rest(side: Side) -> int | None:
    if isinstance(side, CtxSide):
        side.pipeline.thread_store().close()  # sqlite folds its WAL back into the file when the last connection closes
    return side.size()


@contextlib.contextmanager
def _server(name: str, start: Callable[[], contextlib.AbstractContextManager[str]], unavailable: type[Exception]) -> Iterator[str | None]:
    """The address of a throwaway server ``start`` runs, or ``None`` (said on stderr) when this machine cannot run it."""
    try:
        with start() as address:
            yield address
    except (unavailable, OSError) as exc:
        print(f"{name}: skipped ({exc})", file=sys.stderr)
        yield None


def _postgres() -> contextlib.AbstractContextManager[str | None]:
    """A throwaway PostgreSQL cluster's DSN, or ``None``."""
    from ctxcore.testing.harness.postgres import PostgresUnavailable, throwaway_cluster

    return _server("postgres", throwaway_cluster, PostgresUnavailable)


def _pg_size(dsn: str, schema: str) -> Callable[[], int]:
    def size() -> int:
        import psycopg

        with psycopg.connect(dsn) as conn:
            row = conn.execute("SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                               "WHERE n.nspname = %s AND c.relname LIKE 'ctx_thread%%' AND c.relkind = 'r'", (schema,)).fetchone()
        return int(row[0] or 0)
    return size


def _redis() -> contextlib.AbstractContextManager[str | None]:
    """A throwaway ``redis-server`` (append-only file, fsync on every write, as durable as the sqlite store), or ``None``."""
    from ctxcore.testing.harness.redis import RedisUnavailableForTests, throwaway_redis

    return _server("redis", lambda: throwaway_redis(appendonly=True), RedisUnavailableForTests)


def _redis_size(url: str, prefix: str) -> Callable[[], int]:
    def size() -> int:
        import redis

        client = redis.Redis.from_url(url)
        try:
            return sum(int(client.memory_usage(key) or 0) for key in client.scan_iter(match=f"{prefix}:*"))
        finally:
            client.close()
    return size


def sides(tmp: Path, host: Any, dsn: str | None, redis_url: str | None = None, peers: bool = True) -> Iterator[Side]:
    """Every side this machine can run, made one at a time (each measured, then closed)."""
    yield CtxSide("ctxcore memory", "{type: memory}", host, None)
    yield CtxSide("ctxcore sqlite", f"{{type: sqlite, path: {tmp / 'ctx.db'}}}", host, tmp / "ctx.db")
    yield CtxSide("ctxcore jsonl", f"{{type: jsonl, path: {tmp / 'jsonl'}}}", host, tmp / "jsonl")
    if dsn is not None and "postgres" in host.registry.names("thread_store"):
        yield CtxSide("ctxcore postgres", f"{{type: postgres, dsn: '{dsn}', schema: bench}}", host, None, _pg_size(dsn, "bench"))
    if redis_url is not None and "redis" in host.registry.names("thread_store"):
        yield CtxSide("ctxcore redis", f"{{type: redis, url: '{redis_url}', key_prefix: bench}}", host, None, _redis_size(redis_url, "bench"))
    for cls, file in ((AgentsSdkSide, "agents.db"), (LangGraphSide, "langgraph.db")) if peers else ():
        try:
            yield cls(tmp / file)
        except ImportError as exc:
            print(f"{cls.name}: skipped ({exc}; pip install -r requirements-bench.txt)", file=sys.stderr)


Bar = Callable[[str, int], contextlib.AbstractContextManager[Callable[[], None]]]


@contextlib.contextmanager
def progress() -> Iterator[Bar]:
    """``bar(label, total)`` gives a ``tick()`` per unit of work: a rich bar on stderr on a terminal, nothing in a pipe."""
    if not sys.stderr.isatty():
        yield lambda label, total: contextlib.nullcontext(lambda: None)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ctxcore.tools.terminal import make_console

    with Progress(TextColumn("{task.description:<26}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=make_console(stderr=True)) as shown:

        @contextlib.contextmanager
        def bar(label: str, total: int) -> Iterator[Callable[[], None]]:
            task = shown.add_task(label, total=total)
            yield lambda: shown.advance(task)
            shown.update(task, completed=total)

        yield bar


def run(sizes: tuple[int, ...] = SIZES, command: str = "python bench/thread_growth.py", *, everything: bool = True) -> dict[str, Any]:
    """Measure every side (``everything=False``: only the embedded ctxcore stores); return ``{"command", "sizes", "rows"}``."""
    host = _host()
    rows: dict[str, Any] = {}
    pg = _postgres() if everything else contextlib.nullcontext(None)
    rd = _redis() if everything else contextlib.nullcontext(None)
    ticks = -(-max(sizes) // 4) + PROBE_ROUNDS * len(sizes)
    with tempfile.TemporaryDirectory(prefix="thread-growth-") as tmp, pg as dsn, rd as redis_url, progress() as bar:
        for side in sides(Path(tmp), host, dsn, redis_url, peers=everything):
            try:
                with bar(side.name, ticks) as tick:
                    rows[side.name] = measure(side, sizes, tick)
            finally:
                side.close()
            print(f"{side.name}: done", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
    return {"command": command, "sizes": list(sizes), "rows": rows}


def _fmt_ms(v: Any) -> str:
    return "—" if v is None else (f"{v:.2f} ms" if v < 10 else f"{v:.0f} ms")


def _fmt_mb(v: Any) -> str:
    return "—" if v is None else f"{v / 1e6:.2f} MB"


def _ratio(a: Any, b: Any) -> str:
    return "—" if a is None or not b else f"{a / b:.2f}×"


def goals(data: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    """(measure, value, goal, met) for the goals table."""
    rows, small, big = data["rows"], str(min(data["sizes"])), str(max(data["sizes"]))
    out: list[tuple[str, str, str, bool | None]] = []

    def get(side: str, size: str, key: str) -> Any:
        return rows.get(side, {}).get(size, rows.get(side, {}).get(int(size), {})).get(key)

    size, js = get("ctxcore sqlite", big, "size_bytes"), get("ctxcore sqlite", big, "json_bytes")
    out.append((f"store size / JSON size of the messages, {big} messages, sqlite", _ratio(size, js), "≤ 1.3×",
                None if size is None else size / js <= 1.3))
    for backend in ("sqlite", "postgres", "redis", "jsonl"):
        a, b = get(f"ctxcore {backend}", big, "save_ms"), get(f"ctxcore {backend}", small, "save_ms")
        cpu = _ratio(get(f"ctxcore {backend}", big, "save_cpu_ms"), get(f"ctxcore {backend}", small, "save_cpu_ms"))
        if a is not None:
            out.append((f"save at {big} messages / save at {small} messages, {backend} (wall-clock; CPU in brackets)",
                        f"{_ratio(a, b)} ({cpu})", "≤ 2×", a / b <= 2))
    a, b = get("ctxcore sqlite", big, "reopen_cpu_ms"), get("Agents SDK SQLiteSession", big, "reopen_cpu_ms")
    out.append((f"reopen at {big} messages (CPU time), ctxcore sqlite / Agents SDK SQLiteSession", _ratio(a, b), "≤ 1.5×",
                None if a is None or b is None else a / b <= 1.5))
    a, b = get("ctxcore jsonl", big, "reopen_cpu_ms"), get("ctxcore sqlite", big, "reopen_cpu_ms")
    out.append((f"reopen at {big} messages (CPU time), jsonl / sqlite", _ratio(a, b), "≤ 3×", None if a is None else a / b <= 3))
    return out


def markdown(data: dict[str, Any]) -> str:
    """The measurement table and the goals table, as docs/persistence.md shows them."""
    sizes = [str(s) for s in data["sizes"]]
    headers = ["store", *(f"save @{s}" for s in sizes), *(f"save CPU @{s}" for s in sizes), *(f"size @{s}" for s in sizes),
               *(f"reopen @{s}" for s in sizes), f"reopen CPU @{sizes[-1]}"]
    rows = []
    for name, by_size in data["rows"].items():
        cell = [by_size.get(s) or by_size.get(int(s)) for s in sizes]
        rows.append([name, *(_fmt_ms(c["save_ms"]) for c in cell), *(_fmt_ms(c.get("save_cpu_ms")) for c in cell),
                     *(_fmt_mb(c["size_bytes"]) for c in cell), *(_fmt_ms(c["reopen_ms"]) for c in cell),
                     _fmt_ms(cell[-1].get("reopen_cpu_ms"))])
    goal_rows = [[what, value, target, "—" if met is None else ("yes" if met else "**no**")] for what, value, target, met in goals(data)]
    return (f"Measured with `{data['command']}` (one run on a shared machine; saves: the median of {PROBE_ROUNDS} "
            "interleaved probe saves per size (copy the thread at that size, save one more turn, delete the copy), "
            f"wall-clock and this process's CPU time; reopens: the fastest of {REOPENS}, wall-clock and CPU time; the save "
            "goals compare wall-clock time, the reopen goals CPU time, which the machine's other work does not "
            "inflate).\n\n"
            + markdown_table(headers, rows, "l" + "r" * (len(headers) - 1)) + "\n\n"
            + markdown_table(["goal", "measured", "target", "met"], goal_rows, "lrrl") + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Sizes 8 / 40 / 80: a smoke run, not a measurement.")
    parser.add_argument("--doc", type=Path, help="Write the tables into this markdown file (between the markers).")
    parser.add_argument("--json", type=Path, help="Write the raw numbers here.")
    args = parser.parse_args(argv)
    sizes = (8, 40, 80) if args.quick else SIZES
    command = "python bench/thread_growth.py" + (" --quick" if args.quick else "")
    data = run(sizes, command)
    table = markdown(data)
    print(table)
    if args.json:
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    doc = args.doc or (ROOT / "docs" / "persistence.md" if os.environ.get("CTXCORE_BENCH_VIA_MAKE") and not args.quick else None)
    if doc is not None:
        write_section(doc, SECTION, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
