"""Notebook display: ``BuiltContext`` and ``BuildReport`` render as a self-contained, script-free HTML fragment in
Jupyter (``_repr_html_``) and as a short summary in IPython (``_repr_pretty_``), with hostile message text escaped.

The HTML is parsed with the standard library's html.parser, and IPython's own pretty printer is used when
IPython is installed (else the same protocol through a minimal printer with its group/text/breakable calls).
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import ctxcore_counters.plugin
import ctxcore_filters.plugin
import ctxcore_providers.plugin

from ctxcore import Pipeline
from ctxcore.testing import fresh_host

HOSTILE = '</td></table><script>alert("x")</script><img src=x onerror=alert(1)> & <b>bold</b>'

PIPELINE = """\
version: 1
name: notebook
model: {context_window: 4000, reserve_output_tokens: 100}
counter: approximate
providers:
  - {type: static_prompt, text: "You are a careful assistant."}
  - {type: history, id: chat}
filters:
  - {type: max_messages, max_messages: 4}
"""


class _Tree(HTMLParser):
    """Every start tag with its attributes, and the text, of a parsed fragment."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in ("img", "br", "meta", "link"):
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _built(secret: str = "") -> Any:
    host = fresh_host(("ctxcore-providers", ctxcore_providers.plugin), ("ctxcore-filters", ctxcore_filters.plugin),
                      ("ctxcore-counters", ctxcore_counters.plugin))
    history = [{"role": "user", "content": f"old question {i}"} if i % 2 == 0 else
               {"role": "assistant", "content": f"old answer {i}"} for i in range(6)]
    history.append({"role": "user", "content": HOSTILE + secret})
    return Pipeline.from_string(PIPELINE, host=host).build({"messages": history})


def _parse(fragment: str) -> _Tree:
    tree = _Tree()
    tree.feed(fragment)
    tree.close()
    assert not tree.open, f"unclosed {tree.open}"
    return tree


class TestHtml:
    def test_hostile_text_stays_text(self) -> None:
        """Markup in a message is shown as characters: no script, img or bold element comes out of it."""
        tree = _parse(_built()._repr_html_())
        tags = {t for t, _ in tree.tags}
        assert "script" not in tags and "img" not in tags and "b" not in tags
        assert any('<script>alert("x")</script>' in t for t in tree.text)

    def test_self_contained_without_script_style_or_links(self) -> None:
        """The fragment loads nothing and styles only itself: no script, style, link, src or href anywhere."""
        tree = _parse(_built()._repr_html_())
        assert {t for t, _ in tree.tags} <= {"div", "strong", "span", "table", "thead", "tbody", "tr", "th", "td", "ul", "li"}
        for _, attrs in tree.tags:
            assert not {"src", "href"} & set(attrs)
            assert not any(name.startswith("on") for name in attrs)

    def test_rows_show_every_message_with_its_fate(self) -> None:
        """One row per message: the kept ones with their position, the dropped ones marked dropped by the filter."""
        built = _built()
        tree = _parse(built._repr_html_())
        rows = [t for t, _ in tree.tags if t == "tr"]
        assert len(rows) == 1 + len(built.report.records)  # the header row, then one per message
        assert "dropped" in tree.text and "max_messages" in tree.text
        assert any("4 messages" in t and "4 dropped" in t for t in tree.text)

    def test_secrets_in_messages_are_redacted(self) -> None:
        """A credential in a message preview is redacted in the display, as on the ``ctx report`` page."""
        html = _built(" api_key=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")._repr_html_()
        assert "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789" not in html

    def test_the_report_alone_renders_the_same_picture(self) -> None:
        """``BuildReport._repr_html_`` is the same fragment as the build's."""
        built = _built()
        assert built.report._repr_html_() == built._repr_html_()


class _Printer:
    """The part of IPython's RepresentationPrinter a ``_repr_pretty_`` uses."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def text(self, s: str) -> None:
        self.out.append(s)

    def breakable(self, sep: str = " ") -> None:
        self.out.append("\n")

    def group(self, indent: int, open: str, close: str) -> Any:
        printer = self

        class _Group:
            def __enter__(self) -> None:
                printer.out.append(open)

            def __exit__(self, *exc: Any) -> None:
                printer.out.append(close)

        return _Group()


def _pretty(obj: Any) -> str:
    try:
        from IPython.lib.pretty import pretty
    except ImportError:
        printer = _Printer()
        obj._repr_pretty_(printer, False)
        return "".join(printer.out)
    return str(pretty(obj))


class TestPretty:
    def test_pretty_is_a_summary_and_a_line_per_message(self) -> None:
        """IPython shows the counts and one line per message sent, not the dataclass repr of every field."""
        built = _built()
        shown = _pretty(built)
        assert shown.startswith("BuiltContext(4 messages, ")
        assert "4 dropped" in shown
        assert shown.count("\n") >= 4 and "system static_prompt" in shown
        assert "report=" not in shown

    def test_report_pretty_is_its_summary(self) -> None:
        """The report alone shows its summary line."""
        assert _pretty(_built().report).startswith("BuildReport(4 messages, ")
