"""The conformance suite every token counter passes.

Subclass :class:`CounterContract` in a test module, name it ``Test...`` and
implement ``make_counter``; pytest collects every check::

    from ctxcore.testing.contracts.counter import CounterContract

    class TestMyCounter(CounterContract):
        def make_counter(self):
            return MyCounter(vocab="small")

What it pins down is what the rest of ctxcore relies on: empty text is free,
counts are deterministic non-negative integers, a request costs the sum of its
messages plus a constant reply priming (the count cache depends on that), every
part of a message a model reads is counted (names, tool-call ids and arguments,
tool results' ids, images), tool schemas cost tokens, and the counter's ``name``
identifies its counts (the cache is keyed by it). Counters that price images by
another rule than OpenAI's set ``openai_image_rule = False``.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

import pytest

from ctxcore.engine.budget import CachedCounter
from ctxcore.model.images import LOW_DETAIL_TOKENS, UNKNOWN_SIZE_TOKENS
from ctxcore.model.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ai,
    human,
    system,
    tool,
)
from ctxcore.testing.contracts.base import Contract

__all__ = ["CounterContract", "SAMPLE_TEXTS", "png_data_url"]

#: texts of the kinds counters get wrong: scripts, code, JSON, emoji, long runs.
SAMPLE_TEXTS: dict[str, str] = {
    "english": "Budgets are only as good as the counts behind them; count every message once.",
    "chinese": "预算的好坏取决于背后的计数。每条消息只计数一次，缓存会记住结果。",
    "japanese": "トークンの数を正確に数えることは大切です。",
    "korean": "토큰 수를 정확하게 세는 것이 중요합니다.",
    "mixed": "使用 tiktoken 的 o200k_base 编码，gpt-4o 的上下文窗口是 128000 个 token。",
    "python": "def handler(event: dict) -> list[str]:\n    return [k for k, v in event.items() if v]\n",
    "json": '{"id": "9f86d081884c7d659a2feaa0c55ad015", "items": [1, 2, 3], "ok": true}',
    "emoji": "ship it 🚀🎉 — déjà vu, naïve café",
    "base64": base64.b64encode(bytes(range(256))).decode(),
    "whitespace": "a\n\n\n    b\t\tc        d",
}


def png_data_url(width: int, height: int) -> str:
    """A ``data:`` URL holding a valid PNG header of the given size (no pixel data needed)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + chunk).decode()


def _conversation() -> list[Message]:
    return [
        system("You are a careful coding agent."),
        human(SAMPLE_TEXTS["mixed"], name="alice"),
        ai(tool_calls=[{"id": "call_1", "name": "read_file", "arguments": {"path": "src/app.py"}}]),
        tool(SAMPLE_TEXTS["python"], tool_call_id="call_1"),
        ai(SAMPLE_TEXTS["english"]),
    ]


_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the workspace.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the workspace."},
                    "encoding": {"type": "string", "enum": ["utf-8", "latin-1"], "description": "Text encoding."},
                },
                "required": ["path"],
            },
        },
    }
]


class CounterContract(Contract):
    """Checks every counter must pass; subclasses implement :meth:`make_counter`."""

    __contract__ = True

    #: whether images follow OpenAI's detail/tile rule (85 low; 85 + 170 per tile high).
    openai_image_rule: bool = True

    def make_counter(self) -> Any:
        """Return a fresh counter under test."""
        raise NotImplementedError

    @pytest.fixture
    def counter(self) -> Any:
        return self.make_counter()

    # ----------------------------------------------------------------- text
    def test_has_a_name(self, counter: Any) -> None:
        """The counter names itself; the name is its cache identity."""
        assert isinstance(counter.name, str) and counter.name

    def test_empty_text_is_free(self, counter: Any) -> None:
        """count_text('') is 0."""
        assert counter.count_text("") == 0

    @pytest.mark.parametrize("kind", sorted(SAMPLE_TEXTS))
    def test_text_counts_are_positive_deterministic_ints(self, counter: Any, kind: str) -> None:
        """Every sample text costs a positive int, the same each time and for a twin counter."""
        text = SAMPLE_TEXTS[kind]
        first = counter.count_text(text)
        assert isinstance(first, int) and not isinstance(first, bool)
        assert first > 0
        assert counter.count_text(text) == first
        twin = self.make_counter()
        assert twin.name == counter.name and twin.count_text(text) == first

    @pytest.mark.parametrize("kind", sorted(SAMPLE_TEXTS))
    def test_more_text_costs_more(self, counter: Any, kind: str) -> None:
        """Ten copies of a text cost more than one."""
        text = SAMPLE_TEXTS[kind]
        assert counter.count_text((text + "\n") * 10) > counter.count_text(text)

    # ------------------------------------------------------------- messages
    def test_message_costs_at_least_its_content(self, counter: Any) -> None:
        """A message costs its content plus a non-negative overhead."""
        for text in SAMPLE_TEXTS.values():
            assert counter.count_message(human(text)) >= counter.count_text(text)

    def test_name_is_counted(self, counter: Any) -> None:
        """A message with a ``name`` costs more than the same message without."""
        assert counter.count_message(human("hello", name="alice_the_reviewer")) > counter.count_message(human("hello"))

    def test_tool_calls_are_counted(self, counter: Any) -> None:
        """Tool calls cost tokens, and longer JSON arguments cost more."""
        short = ai(tool_calls=[{"id": "call_1", "name": "read_file", "arguments": {"path": "a.py"}}])
        long = ai(tool_calls=[{"id": "call_1", "name": "read_file", "arguments": {"path": "a/very/long/path/to/the/file.py"}}])
        assert counter.count_message(long) > counter.count_message(short) > counter.count_message(ai(""))

    def test_tool_result_id_is_counted(self, counter: Any) -> None:
        """A tool result's ``tool_call_id`` costs tokens."""
        a = tool("done", tool_call_id="call_1")
        b = tool("done", tool_call_id="call_1_with_a_much_longer_identifier_0123456789")
        assert counter.count_message(b) > counter.count_message(a)

    def test_blocks_count_like_text(self, counter: Any) -> None:
        """Text blocks are counted; two blocks cost at least as much as one."""
        one = human([TextBlock(text=SAMPLE_TEXTS["english"])])
        two = human([TextBlock(text=SAMPLE_TEXTS["english"]), TextBlock(text=SAMPLE_TEXTS["chinese"])])
        assert counter.count_message(two) > counter.count_message(one) > 0

    def test_request_is_sum_of_messages_plus_priming(self, counter: Any) -> None:
        """count_messages(ms) == sum(count_message(m)) + count_messages([]) (the cache relies on it)."""
        messages = _conversation()
        priming = counter.count_messages([])
        assert priming >= 0
        assert counter.count_messages(messages) == sum(counter.count_message(m) for m in messages) + priming

    def test_counting_does_not_change_messages(self, counter: Any) -> None:
        """Counting leaves messages as they were."""
        messages = _conversation()
        before = [m.model_dump() for m in messages]
        counter.count_messages(messages)
        assert [m.model_dump() for m in messages] == before

    def test_cached_counts_equal_direct_counts(self, counter: Any) -> None:
        """Through the count cache every message costs what the counter says."""
        cached = CachedCounter(self.make_counter())
        messages = _conversation()
        assert cached.count_messages(messages) == counter.count_messages(messages)
        assert cached.count_messages(messages) == counter.count_messages(messages)
        assert cached.misses == len(messages) and cached.hits == len(messages)

    # --------------------------------------------------------------- images
    def _image_cost(self, counter: Any, block: ImageBlock) -> int:
        return counter.count_message(human([TextBlock(text="look"), block])) - counter.count_message(human([TextBlock(text="look")]))

    def test_images_cost_tokens(self, counter: Any) -> None:
        """An image costs a positive, size-independent-at-low-detail number of tokens."""
        low = self._image_cost(counter, ImageBlock(url="https://example.invalid/a.png", detail="low"))
        assert low > 0
        assert self._image_cost(counter, ImageBlock(url=png_data_url(4000, 3000), detail="low")) == low

    def test_openai_image_rule(self, counter: Any) -> None:
        """Low detail is 85; high detail is 85 + 170 per 512-px tile after scaling; unknown size is the maximum."""
        if not self.openai_image_rule:
            pytest.skip("this counter prices images by its own documented rule")
        cost = lambda **kw: self._image_cost(counter, ImageBlock(**kw))  # noqa: E731
        assert cost(url="https://example.invalid/a.png", detail="low") == LOW_DETAIL_TOKENS
        assert cost(url="https://example.invalid/a.png", detail="high", width=1024, height=1024) == 85 + 170 * 4
        assert cost(url=png_data_url(2048, 4096), detail="high") == 85 + 170 * 6  # 1024x2048 -> 768x1536
        assert cost(url=png_data_url(1920, 1080)) == 85 + 170 * 6  # auto: 1365x768 -> 3x2 tiles
        assert cost(url=png_data_url(300, 200), detail="high") == 85 + 170
        assert cost(url="https://example.invalid/a.png", detail="high") == UNKNOWN_SIZE_TOKENS

    # ---------------------------------------------------------------- tools
    def test_tools_cost_tokens(self, counter: Any) -> None:
        """No tools are free; a tool definition costs tokens, and two cost more than one."""
        assert counter.count_tools([]) == 0
        one = counter.count_tools(_TOOLS)
        two = counter.count_tools(_TOOLS + [{**_TOOLS[0], "function": {**_TOOLS[0]["function"], "name": "write_file"}}])
        assert 0 < one < two
