"""A worker process for the thread durability tests: runs turns on a thread and acknowledges each save.

``python tests/thread_worker.py PIPELINE THREAD NAME TURNS`` appends ``TURNS``
turns (user ``NAME-i``, an assistant tool call, its result, the final reply) to
``THREAD``, reopening the thread for every turn and retrying a turn whose save
got :class:`StaleWrite` (another writer got there first). After each save it
prints ``ACK <step> <NAME-i>`` (flushed): that turn is acknowledged. With
``TURNS`` 0 it runs until killed. It ends by printing ``STALE <n>``, the
number of refused saves. With ``CTX_WORKER_GO`` set, it waits for that file
to exist before the first turn, so several workers start together.
"""

from __future__ import annotations

import os
import sys
import time
from itertools import count

from ctxcore import Pipeline, StaleWrite


def run_turn(pipeline: Pipeline, thread_id: str, label: str) -> int:
    """One whole turn on a freshly opened thread; returns the saved step."""
    thread = pipeline.thread(thread_id)
    thread.add_user(label)
    thread.build()
    call_id = "call_" + label.replace("-", "_")
    thread.add_response({"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": f'{{"q": "{label}"}}'}}]})
    thread.add_tool_result(call_id, f"result for {label}")
    thread.build()
    thread.add_response({"role": "assistant", "content": f"answer to {label}"})
    return thread.save()


def main(argv: list[str]) -> None:
    path, thread_id, name, turns = argv[0], argv[1], argv[2], int(argv[3])
    pipeline = Pipeline.from_yaml(path)
    go = os.environ.get("CTX_WORKER_GO")  # start together: wait until the test creates this file
    while go and not os.path.exists(go):
        time.sleep(0.01)
    stale = 0
    for i in range(turns) if turns else count():
        label = f"{name}-{i}"
        while True:
            try:
                step = run_turn(pipeline, thread_id, label)
                break
            except StaleWrite:
                stale += 1
        print(f"ACK {step} {label}", flush=True)
    print(f"STALE {stale}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
