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

Measured at each size: ``save`` — the median of the last five saves before the
size is reached; ``size`` — the bytes on disk of the store at rest (files
closed; server stores: their tables' total relation size, redis: ``MEMORY USAGE`` of
the store's keys); ``reopen`` — the fastest of five cold reopens (a new store
object / session / saver, then the whole conversation read back; the fastest,
because on a shared machine a slower read measures the machine's other work),
in wall-clock time and in this process's CPU time (``time.process_time``; a
server's own work is not in it), which the reopen goals compare.
Timings are wall-clock on a shared machine: compare ratios from one run, not
numbers across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
REOPENS = 5


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
    """One store under test: ``save_turn`` saves turn i, ``reopen`` reads the whole conversation back cold."""

    name = ""

    def save_turn(self, i: int) -> None:
        raise NotImplementedError

    def prepare_reopen(self) -> None:
        """Untimed set-up before a reopen (ctxcore: compiling a fresh pipeline)."""

    def reopen(self) -> int:
        raise NotImplementedError

    def size(self) -> int | None:
        return None

    def close(self) -> None:
        pass


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

    def save_turn(self, i: int) -> None:
        from ctxcore.model.messages import Message

        user, call, result, answer = turn_items(i)
        self.thread.add_user(user["content"])
        self.thread.add_response(call)
        self.thread.add_tool_result(result["tool_call_id"], result["content"])
        self.thread.add_response(answer)
        self.thread.save()
        self.json_bytes += sum(len(json.dumps(m.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")).encode())
                               for m in self.thread.messages[-4:] if isinstance(m, Message))

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

    def save_turn(self, i: int) -> None:
        user, call, result, answer = turn_items(i)
        tc = call["tool_calls"][0]
        items = [
            {"role": "user", "content": user["content"]},
            {"type": "function_call", "call_id": tc["id"], "name": tc["function"]["name"], "arguments": tc["function"]["arguments"]},
            {"type": "function_call_output", "call_id": result["tool_call_id"], "output": result["content"]},
            {"role": "assistant", "content": answer["content"]},
        ]
        self.loop.run_until_complete(self.session.add_items(items))  # type: ignore[arg-type]

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
def measure(side: Side, sizes: tuple[int, ...]) -> dict[int, dict[str, float | int | None]]:
    """Save turns until each size; the median of the last five saves, the store size at rest, the reopen time."""
    out: dict[int, dict[str, float | int | None]] = {}
    saves: list[float] = []
    turns = 0
    for size in sizes:
        while turns * 4 < size:
            start = time.perf_counter()
            side.save_turn(turns)
            saves.append(time.perf_counter() - start)
            turns += 1
        reopen_times, reopen_cpu = [], []
        for _ in range(REOPENS):
            side.prepare_reopen()
            start, cpu = time.perf_counter(), time.process_time()
            count = side.reopen()
            reopen_cpu.append(time.process_time() - cpu)
            reopen_times.append(time.perf_counter() - start)
            if count != turns * 4:
                raise AssertionError(f"{side.name}: reopened {count} messages, expected {turns * 4}")
        out[size] = {"save_ms": statistics.median(saves[-5:]) * 1000, "reopen_ms": min(reopen_times) * 1000,
                     "reopen_cpu_ms": min(reopen_cpu) * 1000, "size_bytes": _size_at_rest(side)}
        if isinstance(side, CtxSide):
            out[size]["json_bytes"] = side.json_bytes
    return out


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


def run(sizes: tuple[int, ...] = SIZES, command: str = "python bench/thread_growth.py", *, everything: bool = True) -> dict[str, Any]:
    """Measure every side (``everything=False``: only the embedded ctxcore stores); return ``{"command", "sizes", "rows"}``."""
    host = _host()
    rows: dict[str, Any] = {}
    pg = _postgres() if everything else contextlib.nullcontext(None)
    rd = _redis() if everything else contextlib.nullcontext(None)
    with tempfile.TemporaryDirectory(prefix="thread-growth-") as tmp, pg as dsn, rd as redis_url:
        for side in sides(Path(tmp), host, dsn, redis_url, peers=everything):
            try:
                rows[side.name] = measure(side, sizes)
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
        if a is not None:
            out.append((f"save at {big} messages / save at {small} messages, {backend}", _ratio(a, b), "≤ 2×", a / b <= 2))
    a, b = get("ctxcore sqlite", big, "reopen_cpu_ms"), get("Agents SDK SQLiteSession", big, "reopen_cpu_ms")
    out.append((f"reopen at {big} messages (CPU time), ctxcore sqlite / Agents SDK SQLiteSession", _ratio(a, b), "≤ 1.5×",
                None if a is None or b is None else a / b <= 1.5))
    a, b = get("ctxcore jsonl", big, "reopen_cpu_ms"), get("ctxcore sqlite", big, "reopen_cpu_ms")
    out.append((f"reopen at {big} messages (CPU time), jsonl / sqlite", _ratio(a, b), "≤ 3×", None if a is None else a / b <= 3))
    return out


def markdown(data: dict[str, Any]) -> str:
    """The measurement table and the goals table, as docs/persistence.md shows them."""
    sizes = [str(s) for s in data["sizes"]]
    headers = ["store", *(f"save @{s}" for s in sizes), *(f"size @{s}" for s in sizes), *(f"reopen @{s}" for s in sizes),
               f"reopen CPU @{sizes[-1]}"]
    rows = []
    for name, by_size in data["rows"].items():
        cell = [by_size.get(s) or by_size.get(int(s)) for s in sizes]
        rows.append([name, *(_fmt_ms(c["save_ms"]) for c in cell), *(_fmt_mb(c["size_bytes"]) for c in cell),
                     *(_fmt_ms(c["reopen_ms"]) for c in cell), _fmt_ms(cell[-1].get("reopen_cpu_ms"))])
    goal_rows = [[what, value, target, "—" if met is None else ("yes" if met else "**no**")] for what, value, target, met in goals(data)]
    return (f"Measured with `{data['command']}` (one run on a shared machine; saves: wall-clock medians, reopens: "
            "the fastest of five, wall-clock and this process's CPU time; the reopen goals compare CPU time, which the "
            "machine's other work does not inflate).\n\n"
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
