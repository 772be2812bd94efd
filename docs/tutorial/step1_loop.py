"""Step 1: a hand-written OpenAI tool loop, with the usual hand-written truncation.

    python step1_loop.py                  # send everything: the prompt outgrows the window
    python step1_loop.py --keep-last 6    # keep the system prompt and the last 6 messages
"""

from __future__ import annotations

import argparse
import os
import sys

import openai

from tools import QUESTIONS, TOOLS, run_tool

MODEL = os.environ.get("TUTORIAL_MODEL", "gpt-4o-mini")
SYSTEM = "You are a careful coding agent. Read files before answering questions about them."


# --8<-- [start:truncate]
def truncate(messages: list[dict], keep_last: int | None) -> list[dict]:
    """The classic fix: the system prompt plus the newest messages."""
    if keep_last is None:
        return messages
    return messages[:1] + messages[1:][-keep_last:]
# --8<-- [end:truncate]


def main(keep_last: int | None) -> int:
    client = openai.OpenAI()  # reads OPENAI_BASE_URL and OPENAI_API_KEY
    # --8<-- [start:loop]
    messages: list[dict] = [{"role": "system", "content": SYSTEM}]
    for turn, question in enumerate(QUESTIONS, 1):
        messages.append({"role": "user", "content": question})
        while True:
            request = truncate(messages, keep_last)
            try:
                response = client.chat.completions.create(model=MODEL, messages=request, tools=TOOLS)
            except openai.BadRequestError as err:
                print(f"turn {turn}: {len(request)} messages refused: {err.body['message']}")
                return 1
            message = response.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                break
            for call in message.tool_calls:
                result = run_tool(call.function.name, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        print(f"turn {turn}: {len(request)} messages sent, {response.usage.prompt_tokens} prompt tokens")
    # --8<-- [end:loop]
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep-last", type=int, default=None)
    sys.exit(main(parser.parse_args().keep_last))
