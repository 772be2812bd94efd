"""The tutorial agent's one tool, ``read_file``, over the small project in ``project/``."""

from __future__ import annotations

import json
from pathlib import Path

PROJECT = Path(__file__).resolve().parent / "project"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file of the project, by its path relative to the project root.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "e.g. parser.py"}},
                "required": ["path"],
            },
        },
    }
]

# --8<-- [start:questions]
# What the user asks, one turn after the other (a real agent reads these from a prompt).
QUESTIONS = [
    "What does parse_list in parser.py do with nested lists?",
    "Read lexer.py and tests/test_parser.py: are negative numbers lexed and tested?",
    "Does tests/test_parser.py cover an empty nested list like [[]]?",
    "Look at parser.py again: where would a depth limit go?",
    "Thanks. Summarise what we found in three bullet points.",
]
# --8<-- [end:questions]


def run_tool(name: str, arguments: str) -> str:
    """Run one tool call and return its result text (errors are results too: the model reads them)."""
    if name != "read_file":
        return f"error: unknown tool {name!r}"
    path = (PROJECT / json.loads(arguments)["path"]).resolve()
    if PROJECT not in path.parents or not path.is_file():
        return f"error: no such file {path.name!r} in the project"
    return path.read_text(encoding="utf-8")
