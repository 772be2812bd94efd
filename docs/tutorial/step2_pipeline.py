"""Step 2: the same loop, with ctxcore building every request from the whole conversation.

    python step2_pipeline.py [STATE.json]   # STATE.json: where to save the conversation at the end
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import openai

from ctxcore import Pipeline
from tools import QUESTIONS, TOOLS, run_tool

MODEL = os.environ.get("TUTORIAL_MODEL", "gpt-4o-mini")
HERE = Path(__file__).resolve().parent


def main(state_path: str | None) -> int:
    client = openai.OpenAI()  # reads OPENAI_BASE_URL and OPENAI_API_KEY
    # --8<-- [start:loop]
    pipeline = Pipeline.from_yaml(HERE / "agent.yaml")
    state = {"messages": [], "tools": TOOLS}  # the whole conversation; never truncated by hand
    for turn, question in enumerate(QUESTIONS, 1):
        state["messages"].append({"role": "user", "content": question})
        while True:
            built = pipeline.build(state)  # fits the budget, tool calls kept with their results
            response = client.chat.completions.create(model=MODEL, messages=built.to_openai(), tools=TOOLS)
            message = response.choices[0].message
            state["messages"].append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                break
            for call in message.tool_calls:
                result = run_tool(call.function.name, call.function.arguments)
                state["messages"].append({"role": "tool", "tool_call_id": call.id, "content": result})
        report = built.report
        print(f"turn {turn}: {len(built.messages)} messages sent, {report.total_tokens} of {report.budget} tokens, "
              f"{len(report.dropped)} dropped; the model counted {response.usage.prompt_tokens}")
    # --8<-- [end:loop]
    if state_path:
        Path(state_path).write_text(json.dumps(state, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
