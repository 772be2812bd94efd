"""The providers' caching rules as ``ctx replay`` applies them (ctxcore.tools.cache_rules)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxcore.errors import TranscriptError
from ctxcore.tools.cache_rules import (
    LIFETIME_SECONDS,
    AnthropicCache,
    CacheOutcome,
    OpenAICache,
    Price,
    prefix_units,
    price_for,
)
from ctxcore.tools.replay import split_timestamps
from tests.test_cli import ctx


def units(*tokens: int) -> tuple[list[str], list[int]]:
    """Blocks named by position with the given tokens (the same blocks give the same hashes)."""
    rendered = [{"role": "user", "content": f"block {i}"} for i in range(len(tokens))]
    hashes, totals, _ = prefix_units(rendered, list(tokens), None, 0)
    return hashes, totals


class TestOpenAI:
    def test_below_1024_tokens_nothing_is_cached(self) -> None:
        """A prompt under 1,024 tokens is never cached, even when repeated."""
        cache = OpenAICache()
        h, t = units(500, 400)
        cache.observe(h, t, 903)
        assert cache.observe(h, t, 903).read == 0

    def test_cached_part_is_1024_plus_whole_128_steps(self) -> None:
        """A 1,500-token identical prefix caches 1,024 + 3 × 128 = 1,408 tokens."""
        cache = OpenAICache()
        h, t = units(1500, 300)
        assert cache.observe(h[:1], t[:1], 1503).read == 0  # first sight: written, nothing read
        assert cache.observe(h, t, 1803).read == 1408

    def test_any_earlier_request_counts_until_it_expires(self) -> None:
        """The prefix of an earlier (not only the previous) request is read; after 5 idle minutes it is gone."""
        cache = OpenAICache()
        a, ta = units(2048)
        other = prefix_units([{"role": "user", "content": "other"}], [1100], None, 0)
        cache.observe(a, ta, 2051, now=0.0)
        cache.observe(other[0], other[1], 1103, now=10.0)
        assert cache.observe(a, ta, 2051, now=20.0).read == 2048
        assert cache.observe(a, ta, 2051, now=20.0 + LIFETIME_SECONDS + 1).read == 0


class TestAnthropic:
    def test_without_breakpoints_nothing_is_cached(self) -> None:
        """No cache_control, no caching: every request pays full price."""
        cache = AnthropicCache()
        h, t = units(3000, 100)
        cache.observe(h, t, [], 3100)
        assert cache.observe(h, t, [], 3100) == CacheOutcome(0, 0, 3100)

    def test_write_then_read_at_the_previous_end(self) -> None:
        """Turn 1 writes up to its breakpoint; turn 2 reads that prefix and writes only what is new."""
        cache = AnthropicCache()
        h, t = units(2000, 300, 200)
        assert cache.observe(h[:2], t[:2], [1], 2300) == CacheOutcome(0, 2300, 2300)
        assert cache.observe(h, t, [1, 2], 2500) == CacheOutcome(2300, 200, 2500)

    def test_below_the_minimum_a_breakpoint_does_nothing(self) -> None:
        """A breakpoint whose prefix is under the model's minimum neither writes nor reads."""
        cache = AnthropicCache(min_tokens=4096)
        h, t = units(2000, 300)
        cache.observe(h, t, [1], 2300)
        assert cache.observe(h, t, [1], 2300) == CacheOutcome(0, 0, 2300)

    def test_lookback_is_20_blocks(self) -> None:
        """A cached prefix more than 20 blocks before the only breakpoint is not found."""
        cache = AnthropicCache()
        h, t = units(2000, *([10] * 30))
        cache.observe(h[:1], t[:1], [0], 2000)
        assert cache.observe(h, t, [20], t[-1]).read == 2000
        cache2 = AnthropicCache()
        cache2.observe(h[:1], t[:1], [0], 2000)
        assert cache2.observe(h, t, [21], t[-1]).read == 0

    def test_entries_expire_unless_read(self) -> None:
        """An entry read within 5 minutes stays alive; one left unused longer is gone."""
        cache = AnthropicCache()
        h, t = units(2000)
        cache.observe(h, t, [0], 2000, now=0.0)
        assert cache.observe(h, t, [0], 2000, now=200.0).read == 2000
        assert cache.observe(h, t, [0], 2000, now=450.0).read == 2000  # refreshed at 200
        assert cache.observe(h, t, [0], 2000, now=450.0 + LIFETIME_SECONDS + 1).read == 0

    def test_cost_uses_the_write_and_read_multipliers(self) -> None:
        """Writes cost 1.25× and reads 0.1× of the input price."""
        price = price_for("claude-sonnet", input_price=4.0)
        assert (price.read, price.write) == (pytest.approx(0.4), 5.0)
        assert CacheOutcome(read=1_000_000, written=1_000_000, input_tokens=3_000_000).cost(price) == pytest.approx(0.4 + 5.0 + 4.0)



class TestAnthropicOneHour:
    def test_1h_writes_cost_2x_5m_writes_125x_reads_01x(self) -> None:
        """The prefix up to the last 1h breakpoint is written at 2x input, the rest up to the last 5m one at 1.25x."""
        cache = AnthropicCache()
        h, t = units(2000, 1000, 500)
        outcome = cache.observe(h, t, [1, 2], 3500, ttls=["1h", "5m"])
        assert outcome == CacheOutcome(read=0, written=3500, input_tokens=3500, written_long=3000)
        price = price_for("claude-sonnet", input_price=1.0)
        assert outcome.cost(price) == pytest.approx((3000 * 2.0 + 500 * 1.25) / 1_000_000)
        read = cache.observe(h, t, [1, 2], 3500, ttls=["1h", "5m"])
        assert read == CacheOutcome(read=3500, written=0, input_tokens=3500)
        assert read.cost(price) == pytest.approx(3500 * 0.1 / 1_000_000)

    def test_a_1h_entry_outlives_a_pause_a_5m_one_does_not(self) -> None:
        """After 10 idle minutes the 1h prefix is read and only the 5m tail is written again."""
        cache = AnthropicCache()
        h, t = units(2000, 1000, 500)
        cache.observe(h, t, [1, 2], 3500, now=0.0, ttls=["1h", "5m"])
        assert cache.observe(h, t, [1, 2], 3500, now=600.0, ttls=["1h", "5m"]) == CacheOutcome(3000, 500, 3500)
        assert cache.observe(h, t, [1, 2], 3500, now=600.0 + 3600 + 1, ttls=["1h", "5m"]).read == 0

    def test_a_1h_mark_does_not_extend_a_5m_entry_for_free(self) -> None:
        """A 1h breakpoint on a prefix read from a 5m entry bills no write, and the entry still expires after 5 minutes."""
        cache = AnthropicCache()
        h, t = units(2000, 1000)
        cache.observe(h, t, [1], 3000, now=0.0)
        assert cache.observe(h, t, [1], 3000, now=60.0, ttls=["1h"]) == CacheOutcome(3000, 0, 3000)
        assert cache.observe(h, t, [1], 3000, now=60.0 + LIFETIME_SECONDS + 1, ttls=["1h"]) == CacheOutcome(0, 3000, 3000, 3000)

    def test_a_1h_mark_behind_a_read_creates_no_entry(self) -> None:
        """A 1h breakpoint before the prefix read from a later 5m entry is not cached for an hour for free."""
        cache = AnthropicCache()
        h, t = units(2000, 1000, 500)
        cache.observe(h, t, [2], 3500, now=0.0)
        assert cache.observe(h, t, [1, 2], 3500, now=60.0, ttls=["1h", "5m"]) == CacheOutcome(3500, 0, 3500)
        assert cache.observe(h, t, [1, 2], 3500, now=1000.0, ttls=["1h", "5m"]).read == 0

    def test_an_expired_1h_entry_rewritten_at_5m_lives_5_minutes(self) -> None:
        """An entry's lifetime is the one of the breakpoint that last wrote it, not the longest it ever had."""
        cache = AnthropicCache()
        h, t = units(2000)
        cache.observe(h, t, [0], 2000, now=0.0, ttls=["1h"])
        assert cache.observe(h, t, [0], 2000, now=5000.0) == CacheOutcome(0, 2000, 2000)
        assert cache.observe(h, t, [0], 2000, now=5000.0 + LIFETIME_SECONDS + 1).read == 0

def test_prices_table_and_overrides() -> None:
    """OpenAI rows keep their cached-input price; overrides win; an unknown model names the known ones."""
    assert price_for("gpt-4o") == Price("openai", 2.50, 1.25, 2.50)
    assert price_for("gpt-4o", input_price=5.0).read == 2.5  # the row's ratio follows the input price
    assert price_for("gpt-4o", cached_price=0.1).read == 0.1
    with pytest.raises(ValueError, match="known: claude-haiku"):
        price_for("gpt-9")


def test_split_timestamps() -> None:
    """Timestamps (ISO or epoch) are read and removed from the messages; a bad one names the message."""
    messages, times = split_timestamps([{"role": "user", "content": "a", "timestamp": "2026-01-01T00:00:00Z"},
                                        {"role": "assistant", "content": "b", "timestamp": 1767225660}])
    assert all("timestamp" not in m for m in messages)
    assert times == [1767225600.0, 1767225660.0]
    assert split_timestamps([{"role": "user", "content": "a"}])[1] is None
    with pytest.raises(TranscriptError, match=r"messages\[0\]\.timestamp 'soon'"):
        split_timestamps([{"role": "user", "content": "a", "timestamp": "soon"}])


def _transcript(turns: int, gap: float) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for k in range(turns):
        out.append({"role": "user", "content": f"Question {k}: " + "detail " * 300, "timestamp": k * gap})
        out.append({"role": "assistant", "content": f"Answer {k}. " + "words " * 200, "timestamp": k * gap + 5})
    return out


@pytest.mark.parametrize(("gap", "turn_ttl", "anthropic_reads"), [
    (30.0, "1h", True), (LIFETIME_SECONDS * 2, "off", False), (LIFETIME_SECONDS * 2, "1h", True)])
def test_ctx_replay_prices_both_providers(tmp_path: Path, gap: float, turn_ttl: str, anthropic_reads: bool) -> None:
    """ctx replay --json reports each provider's rules; idle gaps longer than 5 minutes lose Anthropic's cache unless the turn breakpoint lives an hour."""
    (tmp_path / "t.json").write_text(json.dumps(_transcript(6, gap)))
    (tmp_path / "p.yaml").write_text(
        f"version: 1\nmodel: {{context_window: 64000}}\ntarget: {{provider: anthropic, cache: auto, cache_turn_ttl: '{turn_ttl}'}}\n"
        "providers:\n  - {type: static_prompt, text: You are terse.}\n  - {type: history}\n"
    )
    result = ctx("replay", str(tmp_path / "t.json"), "--pipeline", str(tmp_path / "p.yaml"), "--json", "--anthropic-price", "3")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    anthropic = data["providers"]["anthropic"]
    assert anthropic["written_tokens"] > 0
    assert (anthropic["cached_tokens"] > 0) is anthropic_reads
    assert (anthropic["written_long_tokens"] > 0) is (turn_ttl == "1h")
    assert data["providers"]["openai"]["cached_tokens"] > 0 or gap > LIFETIME_SECONDS
    assert {"openai_cached_tokens", "anthropic_read_tokens", "anthropic_write_tokens", "time"} <= set(data["calls"][0])
    text = ctx("replay", str(tmp_path / "t.json"), "--pipeline", str(tmp_path / "p.yaml")).stdout
    assert "anthropic caching rules:" in text and "openai caching rules:" in text
