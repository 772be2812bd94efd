"""A worker process for the session tests: appends one turn of items per add_items call to a shared session.

Usage: python session_worker.py PIPELINE_YAML SESSION_ID NAME TURNS GO_FILE
Waits for GO_FILE (so workers start together), then for each turn adds a user
message, a function call and its output, printing ``ACK NAME-i`` once the
write returned (the turn is acknowledged).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from ctxcore_openai_agents import CheckpointerSession

from ctxcore import Pipeline


async def main(yaml_path: str, session_id: str, name: str, turns: int, go: str) -> None:
    session = CheckpointerSession.from_pipeline(Pipeline.from_yaml(yaml_path), session_id, retries=1000)
    while not Path(go).exists():
        time.sleep(0.01)
    for i in range(turns):
        tag = f"{name}-{i}"
        await session.add_items([
            {"role": "user", "content": tag},
            {"type": "function_call", "call_id": f"call-{tag}", "name": "lookup", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"call-{tag}", "output": f"result {tag}"},
        ])
        print(f"ACK {tag}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]))
