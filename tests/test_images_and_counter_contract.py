"""Image token pricing (ctxcore.model.images) and the counter contract on a dependency-free counter."""

from __future__ import annotations

import base64
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxcore.engine.counting import MessageCounter
from ctxcore.model.images import (
    UNKNOWN_SIZE_TOKENS,
    image_size,
    openai_image_tokens,
    sniff_size,
)
from ctxcore.model.messages import ImageBlock, Message
from ctxcore.testing.contracts.counter import CounterContract, png_data_url


class CharsCounter(MessageCounter):
    """Four characters a token: the smallest counter built on MessageCounter."""

    name = "chars4"

    def count_text(self, text: str) -> int:
        return (len(text) + 3) // 4


class TestMessageCounterContract(CounterContract):
    def make_counter(self) -> CharsCounter:
        return CharsCounter()


class TestFlatImageCounterContract(CounterContract):
    openai_image_rule = False

    def make_counter(self) -> CharsCounter:
        counter = CharsCounter()
        counter.image_tokens = 258
        return counter


def _jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xda"


def _webp_vp8x(width: int, height: int) -> bytes:
    body = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body


class TestImageSize:
    def test_sniffs_png_gif_jpeg_webp(self) -> None:
        """Dimensions are read from the headers of the four common formats."""
        png = base64.b64decode(png_data_url(640, 480).split(",", 1)[1])
        gif = b"GIF89a" + struct.pack("<HH", 320, 200) + b"\x00" * 6
        assert sniff_size(png) == (640, 480)
        assert sniff_size(gif) == (320, 200)
        assert sniff_size(_jpeg(1920, 1080)) == (1920, 1080)
        assert sniff_size(_webp_vp8x(800, 600)) == (800, 600)
        assert sniff_size(b"not an image") is None

    def test_block_fields_win_and_urls_without_data_are_unknown(self) -> None:
        """width/height on the block take precedence; a plain URL has no known size."""
        assert image_size(ImageBlock(url=png_data_url(10, 10), width=100, height=50)) == (100, 50)
        assert image_size(ImageBlock(url="https://example.invalid/x.png")) is None
        assert image_size(ImageBlock(url="data:image/png;base64,@@@@")) is None
        jpeg_url = "data:image/jpeg;base64," + base64.b64encode(_jpeg(4000, 3000)).decode()
        assert image_size(ImageBlock(url=jpeg_url)) == (4000, 3000)

    def test_width_and_height_are_not_sent_to_providers(self) -> None:
        """The counting-only fields never reach the OpenAI rendering."""
        m = Message(role="user", content=(ImageBlock(url="https://example.invalid/x.png", width=10, height=10),))
        assert m.to_openai()["content"] == [{"type": "image_url", "image_url": {"url": "https://example.invalid/x.png"}}]

    def test_rejects_nonpositive_dimensions(self) -> None:
        """Zero or negative sizes are invalid."""
        with pytest.raises(ValueError):
            ImageBlock(url="x", width=0, height=10)


class TestOpenAIRule:
    @pytest.mark.parametrize(
        ("size", "detail", "tokens"),
        [
            ((4096, 4096), "low", 85),
            ((512, 512), "high", 85 + 170),
            ((1024, 1024), "high", 85 + 170 * 4),
            ((2048, 4096), "high", 85 + 170 * 6),
            ((1920, 1080), None, 85 + 170 * 6),
            ((4000, 100), "high", 85 + 170 * 4),
            ((None, None), "high", UNKNOWN_SIZE_TOKENS),
        ],
    )
    def test_table(self, size: tuple[int | None, int | None], detail: str | None, tokens: int) -> None:
        """Known sizes give OpenAI's published costs."""
        assert openai_image_tokens(size[0], size[1], detail) == tokens

    @given(st.integers(1, 20_000), st.integers(1, 20_000))
    def test_never_above_the_unknown_size_cost(self, w: int, h: int) -> None:
        """No image costs more than the price of an image of unknown size."""
        assert 85 + 170 <= openai_image_tokens(w, h, "high") <= UNKNOWN_SIZE_TOKENS
