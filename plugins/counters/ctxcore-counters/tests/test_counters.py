"""Tests for ctxcore-counters: the contract, OpenAI's message rules, offline loading."""

from __future__ import annotations

import gzip
import hashlib
import math
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from ctxcore_counters import (
    ApproximateCounter,
    EncodingUnavailable,
    TiktokenCounter,
    encodings,
)
from ctxcore_counters.tiktoken_counter import encoding_for_model
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcore import ImageBlock, Message, system
from ctxcore.testing.contracts.counter import CounterContract, png_data_url


# ------------------------------------------------------------------ contract
class TestApproximateCl100kContract(CounterContract):
    def make_counter(self) -> ApproximateCounter:
        return ApproximateCounter("cl100k")


class TestApproximateO200kContract(CounterContract):
    def make_counter(self) -> ApproximateCounter:
        return ApproximateCounter("o200k")


class TestApproximatePlainContract(CounterContract):
    def make_counter(self) -> ApproximateCounter:
        return ApproximateCounter(chars_per_token=4)


class TestTiktokenCl100kContract(CounterContract):
    def make_counter(self) -> TiktokenCounter:
        return TiktokenCounter("cl100k_base")


class TestTiktokenO200kContract(CounterContract):
    def make_counter(self) -> TiktokenCounter:
        return TiktokenCounter("o200k_base")


# ------------------------------------------------- OpenAI's counting rules
def _ref_image_tokens(part: dict) -> int:
    """OpenAI's published image rule, written out independently of ctxcore.model.images."""
    image = part["image_url"]
    if image.get("detail") == "low":
        return 85
    width, height = image["_size"]
    if width > 2048 or height > 2048:
        ratio = 2048 / max(width, height)
        width, height = width * ratio, height * ratio
    if width > 768 and height > 768:
        ratio = 768 / min(width, height)
        width, height = width * ratio, height * ratio
    return 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)


def reference_count(encoding: Any, messages: list[dict]) -> int:
    """OpenAI's counting rule for chat models, on OpenAI message dicts.

    3 tokens per message, every value's tokens, 1 more for a name, 3 for reply
    priming (the cookbook's gpt-4 / gpt-4o rule); text parts by their text,
    image parts by the image rule, each tool call 3 plus id, name and arguments.
    """
    n = lambda s: len(encoding.encode_ordinary(s))  # noqa: E731
    total = 0
    for message in messages:
        total += 3
        for key, value in message.items():
            if value is None:
                continue
            if key == "content" and isinstance(value, list):
                for part in value:
                    total += n(part["text"]) if part["type"] == "text" else _ref_image_tokens(part)
            elif key == "tool_calls":
                for call in value:
                    total += 3 + n(call["id"]) + n(call["function"]["name"]) + n(call["function"]["arguments"])
            else:
                total += n(value)
                if key == "name":
                    total += 1
    return total + 3


def _to_ctxcore(message: dict) -> Message:
    """Convert an OpenAI dict; a reference-only ``_size`` hint becomes ImageBlock width/height."""
    if not isinstance(message.get("content"), list):
        return Message.from_openai(message)
    parts, sizes = [], []
    for part in message["content"]:
        if part["type"] == "image_url":
            sizes.append(part["image_url"].get("_size"))
            part = {"type": "image_url", "image_url": {k: v for k, v in part["image_url"].items() if k != "_size"}}
        parts.append(part)
    converted = Message.from_openai({**message, "content": parts})
    blocks, sized = [], iter(sizes)
    for block in converted.content or ():
        if isinstance(block, ImageBlock):
            size = next(sized)
            if size and not block.url.startswith("data:"):  # data: URLs carry their own size
                block = ImageBlock(url=block.url, detail=block.detail, width=size[0], height=size[1])
        blocks.append(block)
    return converted.model_copy(update={"content": tuple(blocks)})


FIXED_CASES = {
    "text": [
        {"role": "system", "content": "You are a helpful, pattern-following assistant."},
        {"role": "user", "content": "New synergies will help drive top-line growth."},
        {"role": "assistant", "content": "def f(x):\n    return {'a': [1, 2, 3]}\n" * 5},
    ],
    "names": [
        {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth."},
        {"role": "user", "name": "alice", "content": "Ça marche — 你好, 世界! 🎉"},
    ],
    "tool_calls": [
        {"role": "user", "content": "What's the weather in Paris and in 北京?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_abc123", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "call_def456", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "北京", "unit": "c"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_abc123", "content": '{"temp": 21, "sky": "clear"}'},
        {"role": "tool", "tool_call_id": "call_def456", "content": '{"temp": 8, "sky": "haze"}'},
    ],
    "images": [
        {"role": "user", "content": [
            {"type": "text", "text": "What is in these images?"},
            {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png", "detail": "low"}},
            {"type": "image_url", "image_url": {"url": "https://example.invalid/b.png", "detail": "high", "_size": (1024, 1024)}},
            {"type": "image_url", "image_url": {"url": png_data_url(4096, 8192), "_size": (4096, 8192)}},
            {"type": "image_url", "image_url": {"url": png_data_url(1920, 1080), "detail": "high", "_size": (1920, 1080)}},
        ]},
    ],
}


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("case", sorted(FIXED_CASES))
def test_message_counts_match_openai_reference(encoding: str, case: str) -> None:
    """tiktoken message counts equal the reference rule on text, names, tool calls and images."""
    counter = TiktokenCounter(encoding)
    messages = FIXED_CASES[case]
    ours = counter.count_messages([_to_ctxcore(m) for m in messages])
    assert ours == reference_count(encodings.load_encoding(encoding), messages)


def test_known_counts() -> None:
    """Both encodings give their real token counts for known strings."""
    cl, o2 = TiktokenCounter("cl100k_base"), TiktokenCounter("o200k_base")
    assert cl.count_text("hello world") == 2 and o2.count_text("hello world") == 2
    assert cl.count_text("<|endoftext|>") > 1  # special-token text is ordinary text
    assert cl.count_text("预算取决于计数") != o2.count_text("预算取决于计数")


def test_tool_schema_rule_per_encoding() -> None:
    """count_tools follows the cookbook rule: function init 10 (cl100k) or 7 (o200k), end 12."""
    tools = [{"type": "function", "function": {"name": "f", "description": "", "parameters": {"properties": {}}}}]
    for encoding, init in (("cl100k_base", 10), ("o200k_base", 7)):
        counter = TiktokenCounter(encoding)
        assert counter.count_tools(tools) == init + counter.count_text("f:") + 12


# ---------------------------------------------------------- offline loading
@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Opening a connection or resolving a name raises; attempts are recorded."""
    attempts: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(repr(args[:2]))
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(tiktoken, "get_encoding", refuse)  # would download OpenAI encodings
    return attempts


@pytest.fixture
def bare_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No bundling package, an empty TIKTOKEN_CACHE_DIR, nothing loaded yet."""
    monkeypatch.setattr(encodings, "SOURCES", [encodings._cache_dir_files])
    monkeypatch.setattr(encodings, "_loaded", {})
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    return cache


def _packaged_file(name: str) -> Path:
    return next(p for p in encodings._package_files(name) if p.is_file())


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_missing_encoding_fails_at_once_with_instruction(no_network: list[str], bare_machine: Path, name: str) -> None:
    """With no source and networking disabled, the counter raises EncodingUnavailable naming every fix."""
    with pytest.raises(EncodingUnavailable) as info:
        TiktokenCounter(name)
    message = str(info.value)
    assert f"'bpe_file: /path/to/{name}.tiktoken'" in message
    assert "TIKTOKEN_CACHE_DIR" in message and "'bpe-openai'" in message
    assert "never downloads" in message
    assert no_network == []  # failed before any network attempt


def test_missing_bpe_file_names_the_path(no_network: list[str], bare_machine: Path) -> None:
    """A bpe_file that does not exist is named in the error."""
    with pytest.raises(EncodingUnavailable, match="nope.tiktoken.*does not exist"):
        TiktokenCounter("o200k_base", bpe_file=str(bare_machine / "nope.tiktoken"))


def test_loads_from_tiktoken_cache_dir(no_network: list[str], bare_machine: Path) -> None:
    """tiktoken's own cache entry (sha1 of the source URL) in TIKTOKEN_CACHE_DIR is used offline."""
    key = hashlib.sha1(encodings.ENCODINGS["o200k_base"].url.encode()).hexdigest()
    (bare_machine / key).write_bytes(gzip.decompress(_packaged_file("o200k_base").read_bytes()))
    assert TiktokenCounter("o200k_base").count_text("hello world") == 2


def test_loads_named_file_from_cache_dir(no_network: list[str], bare_machine: Path) -> None:
    """A file named <encoding>.tiktoken.gz in TIKTOKEN_CACHE_DIR is used offline."""
    shutil.copy(_packaged_file("cl100k_base"), bare_machine / "cl100k_base.tiktoken.gz")
    assert TiktokenCounter("cl100k_base").count_text("hello world") == 2


def test_bpe_file_loads_same_encoding(no_network: list[str], bare_machine: Path) -> None:
    """A plain ranks file given as bpe_file gives the same counts as the bundled copy."""
    plain = bare_machine / "o200k.tiktoken"
    plain.write_bytes(gzip.decompress(_packaged_file("o200k_base").read_bytes()))
    text = "Budgets are only as good as the counts behind them. 预算取决于计数。"
    from_file = TiktokenCounter("o200k_base", bpe_file=str(plain))
    encodings._loaded.clear()
    encodings.SOURCES[:] = [encodings._package_files]
    assert from_file.count_text(text) == TiktokenCounter("o200k_base").count_text(text)


def test_wrong_bpe_file_is_refused(no_network: list[str], bare_machine: Path) -> None:
    """A ranks file of another encoding fails the checksum with a clear message."""
    with pytest.raises(EncodingUnavailable, match="not the expected ranks file"):
        TiktokenCounter("o200k_base", bpe_file=str(_packaged_file("cl100k_base")))


def test_model_map() -> None:
    """Model names map to their encodings; unknown models explain the fix."""
    assert encoding_for_model("gpt-4o-mini") == "o200k_base"
    assert encoding_for_model("gpt-4.1-nano") == "o200k_base"
    assert encoding_for_model("gpt-4-turbo") == "cl100k_base"
    with pytest.raises(EncodingUnavailable, match="set 'encoding:'"):
        encoding_for_model("llama-3")
    assert TiktokenCounter(model="gpt-4").name == "tiktoken:cl100k_base"
    assert TiktokenCounter(model="gpt-4o").name == "tiktoken:o200k_base"


def test_unsupported_encoding() -> None:
    """An encoding other than cl100k_base / o200k_base is refused with the choices."""
    with pytest.raises(EncodingUnavailable, match="cl100k_base, o200k_base"):
        TiktokenCounter("p50k_base")


# -------------------------------------------------------------- approximate
class TestApproximate:
    def test_name_carries_family(self) -> None:
        """The family is part of the name, so the two calibrations never share cache entries."""
        assert ApproximateCounter("cl100k").name == "approximate:cl100k"
        assert ApproximateCounter("o200k").name == "approximate:o200k"
        with pytest.raises(ValueError, match="unknown family"):
            ApproximateCounter("p50k")  # type: ignore[arg-type]

    def test_chinese_is_not_priced_like_english(self) -> None:
        """Chinese costs about a token per character, far above characters / 4."""
        text = "每条消息只计数一次，缓存会记住结果。" * 20
        real = TiktokenCounter("cl100k_base").count_text(text)
        assert ApproximateCounter("cl100k").count_text(text) >= 0.95 * real > len(text) / 4

    def test_random_runs_cost_more_than_words(self) -> None:
        """A base64 run costs far more than an English word run of the same length."""
        c = ApproximateCounter("cl100k")
        b64 = "QmFzZTY0IGlzIGV4cGVuc2l2ZSB0byB0b2tlbml6ZSBhbmQgc2hvdWxkIGNvc3QgbW9yZQ=="
        words = ("tokenize " * 20)[: len(b64)]
        assert c.count_text(b64) > 2 * c.count_text(words)


class TestApproximatePlain:
    def test_plain_mode_is_characters_over_ratio(self) -> None:
        """chars_per_token=N prices a string at len // N, whatever its script, under its own counter name."""
        c = ApproximateCounter(chars_per_token=4)
        assert c.count_text("abcdefghij") == 2 and c.count_text("每条消息只计数一次") == 2 and c.count_text("") == 0
        assert c.name == "approximate:plain-4" != ApproximateCounter(chars_per_token=3).name

    @pytest.mark.parametrize("bad", [0, -1, 2.5, True, "4"])
    def test_bad_ratio_is_refused(self, bad: Any) -> None:
        """A ratio that is not a whole number >= 1 fails at construction, naming the option."""
        with pytest.raises(ValueError, match="chars_per_token"):
            ApproximateCounter(chars_per_token=bad)

    def test_yaml_option(self) -> None:
        """`counter: {type: approximate, chars_per_token: 3}` builds the plain counter from a pipeline."""
        from ctxcore import Pipeline

        pipe = Pipeline.from_dict({"version": 1, "counter": {"type": "approximate", "chars_per_token": 3},
                                   "providers": [{"type": "history"}]})
        report = pipe.build({"messages": [{"role": "user", "content": "x" * 30}]}).report
        assert report.total_tokens == (3 + len("user") // 3 + 30 // 3) + 3  # overhead, role, text; reply priming


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.integers(min_value=1, max_value=12))
def test_plain_mode_matches_the_rule(text: str, ratio: int) -> None:
    """Plain mode is exactly len(text) // chars_per_token for any text and ratio."""
    assert ApproximateCounter(chars_per_token=ratio).count_text(text) == len(text) // ratio


def test_system_message_count_is_stable() -> None:
    """The same prompt always costs the same (counts are deterministic)."""
    c = TiktokenCounter("cl100k_base")
    assert c.count_message(system("persona")) == c.count_message(system("persona"))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_approximate_prices_every_nonempty_text(text: str) -> None:
    """Any text costs a non-negative int, zero only when empty, and repeating it never costs less."""
    for family in ("cl100k", "o200k"):
        c = ApproximateCounter(family)  # type: ignore[arg-type]
        n = c.count_text(text)
        assert isinstance(n, int) and (n == 0) == (text == "")
        assert c.count_text(text + "\n" + text) >= n


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=120))
def test_tiktoken_counts_arbitrary_text(text: str) -> None:
    """tiktoken counts any text without error; the count is the encoding's length."""
    counter = TiktokenCounter("o200k_base")
    assert counter.count_text(text) == len(encodings.load_encoding("o200k_base").encode_ordinary(text))


class TestApproximateFeatures:
    """The C-level passes of ctxcore_counters._features count the pieces the docs describe."""

    def counts(self, text: str) -> dict[str, float]:
        from ctxcore_counters.approximate import FEATURES, features

        return {k: v for k, v in zip(FEATURES, features(text), strict=True) if v}

    def test_words_parts_and_long_words(self) -> None:
        """Words are parts, camelCase humps are counted apart, letters past five of a word are extra."""
        assert self.counts("hello camelCaseName ab") == {"parts": 3, "humps": 2, "extra_letters": 13 - 5}

    def test_digits_marks_spaces_and_breaks(self) -> None:
        """Digit groups of three, a mark joins the word after it, runs of spaces and line breaks are one each."""
        got = self.counts("x = 1234567\n\n    foo.attr !!")
        assert got["digit_groups"] == 3 and got["newlines"] == 1 and got["indents"] == 2  # '    ', ' ' before 1234567
        assert got["punct_runs"] == 2 and got["punct_extra"] == 1 and got["joined_marks"] == 1  # '=', '!!'; '.attr'

    def test_pieces_the_pre_tokenizers_cut(self) -> None:
        """A space takes a lone mark from the word after it; a line break after punctuation joins it."""
        assert self.counts("f (self") == {"parts": 2, "punct_runs": 1}  # 'f', ' (', 'self'
        # the pieces: '{"', 'a', '":', ' ', '1', ',\n', '"b', '":', ' ', '2', '}\n'
        assert self.counts('{"a": 1,\n"b": 2}\n') == {"parts": 2, "joined_marks": 1, "punct_runs": 5, "punct_extra": 3,
                                                      "digit_groups": 2, "indents": 2}

    def test_random_runs_are_priced_per_character(self) -> None:
        """A 24-character base64 run is priced per character, not as words and digits; a hex id stays pieces."""
        got = self.counts("key aGVsbG8gV29ybGQhIFRoaXM=")
        assert got["random_chars"] == 24 and got["parts"] == 1 and "digit_groups" not in got and "humps" not in got
        got = self.counts("id 3f2a9c1be4d07a6f5e8b2c9d1a0f4e7b")  # cut at every letter/digit change, as tiktoken does
        assert "random_chars" not in got and got["digit_groups"] == 15 and got["parts"] == 1 + 15

    def test_non_ascii_characters_by_kind(self) -> None:
        """CJK (frequent or not), kana, hangul, CJK punctuation, other letters, symbols and emoji per character."""
        got = self.counts("的龘、かな한글 Привет → 😀")
        assert got["cjk"] == 1 and got["cjk_rare"] == 1 and got["cjk_punct"] == 1 and got["kana"] == 2
        assert got["hangul"] == 2 and got["letters"] == 6 and got["symbols"] == 1 and got["emoji"] == 1

    @settings(max_examples=200, deadline=None)
    @given(st.text(max_size=300))
    def test_features_are_non_negative_and_grow_with_repetition(self, text: str) -> None:
        """No feature count is negative, and ten copies never cost fewer tokens than one."""
        from ctxcore_counters.approximate import features

        assert all(v >= 0 for v in features(text))
        counter = ApproximateCounter()
        assert counter.count_text(text * 10) >= counter.count_text(text)
