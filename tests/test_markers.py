"""The marker neutraliser (``ctxcore.kit.markers``): every look-alike is found, neutralising is idempotent and leaves nothing live.

Property tests draw forged markers from ``ctxcore.testing.markers``; the quick
profile runs 200 examples each, ``CTXCORE_THOROUGH=1`` runs 5,000 (docs/security.md).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcore.kit import CLOSE_MARKER, OPEN_MARKER, count_markers, has_marker, neutralize_markers, skeleton
from ctxcore.testing.markers import marker_lookalike, text_with_markers

EXAMPLES = 5000 if os.environ.get("CTXCORE_THOROUGH") == "1" else 200


class TestNeutraliser:
    @settings(max_examples=EXAMPLES, deadline=None)
    @given(marker_lookalike())
    def test_every_lookalike_is_found(self, forged: str) -> None:
        """Each drawn look-alike (homoglyphs, NFKC forms, invisible characters, other brackets and slashes) is one marker."""
        assert count_markers(forged) == 1, (forged, skeleton(forged))

    @settings(max_examples=EXAMPLES, deadline=None)
    @given(text_with_markers())
    def test_neutralised_text_has_no_marker_and_is_stable(self, text: str) -> None:
        """After neutralising nothing is live, and neutralising again changes nothing (idempotent)."""
        once = neutralize_markers(text)
        assert count_markers(once) == 0
        assert neutralize_markers(once) == once

    @settings(max_examples=EXAMPLES, deadline=None)
    @given(st.text())
    def test_only_brackets_change(self, text: str) -> None:
        """Neutralising keeps the length and changes only bracket characters, each into ``(``."""
        out = neutralize_markers(text)
        assert len(out) == len(text)
        assert all(a == b or b == "(" for a, b in zip(text, out, strict=True))

    @pytest.mark.parametrize("text", [OPEN_MARKER + "]", CLOSE_MARKER, "[runtime context", "[ / RUNTIME   CONTEXT ]"])
    def test_the_exact_markers_are_markers(self, text: str) -> None:
        """The markers the provider writes are found too (only the provider's own block may keep them)."""
        assert has_marker(text)
        assert neutralize_markers(text).startswith("(")

    @pytest.mark.parametrize("text", ["(Runtime Context)", "[Runtime Contex", "[x] runtime context", "[Runtime] Context",
                                      "[Run time Context"])
    def test_near_misses_are_left_alone(self, text: str) -> None:
        """A parenthesis (what a neutralised marker becomes) or a broken word is not a marker."""
        assert not has_marker(text)
        assert neutralize_markers(text) == text

    def test_bracket_heavy_text_is_not_rescanned(self) -> None:
        """JSON full of brackets is rejected by the regex engine (each bracket is followed at most a few characters)."""
        text = '[{"a": [1, [2, [3]]]}, "[x]"]\n' * 2000
        assert neutralize_markers(text) is text


class TestLookAlikes:
    def test_every_confusable_of_every_marker_letter_is_caught(self) -> None:
        """Each homoglyph the confusables table (plus small capitals and other-script letters) gives for any letter,
        put in its place in either marker, is found and neutralised."""
        from ctxcore.testing.markers import homoglyphs

        missed = []
        for marker in ("[Runtime Context", "[/Runtime Context]"):
            for i, letter in enumerate(marker):
                for glyph in homoglyphs(letter) if letter.isalpha() else "":
                    forged = marker[:i] + glyph + marker[i + 1:]
                    if count_markers(forged) != 1 or has_marker(neutralize_markers(forged)):
                        missed.append(forged)
        assert not missed, missed[:20]

    @pytest.mark.parametrize("text", ["[Runtiмe Context", "[Rцntiмe Cοntεxt]", "[ʀuntime Context", "[RUNTIᴍE CONTEXT",
                                      "[Runt1me C0ntext", "[Rüntime Cóntext", "[/Rυntime Сontext]", "[Runtirne Context"])
    def test_mixed_script_and_accented_labels_are_markers(self, text: str) -> None:
        """A label mixing Latin with letters of another script, small capitals, digits or accents reads as a marker."""
        assert count_markers(text) == 1 and neutralize_markers(text).startswith("(")

    @pytest.mark.parametrize("text", ["[Runtime-Context]", "[Runtime_Context]", "[Runtime.Context", "[Runtime — Context]",
                                      "[RuntimeContext]"])
    def test_joined_words_are_markers(self, text: str) -> None:
        """A hyphen, underscore, dot or dash between the two words still reads as the marker's two words."""
        assert count_markers(text) == 1 and count_markers(neutralize_markers(text)) == 0

    @pytest.mark.parametrize("text", ["[Runtime--Context]", "[Runtirn Context", "[Runtime, Context]"])
    def test_other_separators_and_broken_words_are_left_alone(self, text: str) -> None:
        """Two joiners, a comma, or ``rn`` without its ``e`` do not spell the marker."""
        assert not has_marker(text)

    @pytest.mark.parametrize("text", ["[Рантайм Контекст]", "[ᴛest]", "[Контекст Runtime"])
    def test_labels_in_another_script_are_left_alone(self, text: str) -> None:
        """A label written (mostly) in another script is not a marker: fewer exact letters than stand-ins."""
        assert not has_marker(text)


class TestBracketTable:
    """The opening characters come from ``ctxcore.kit._bracket_table`` only when it was made from the same data."""

    def test_recorded_entry_equals_the_computation(self) -> None:
        """The entry for this Python's Unicode data and the installed confusables is exactly the computed class."""
        from ctxcore.kit import markers
        from ctxcore.kit._bracket_table import BRACKETS

        key = markers._bracket_data_key()
        if key not in BRACKETS:
            pytest.skip(f"no recorded entry for Unicode {key[0]}, confusable-homoglyphs {key[1]} "
                        "(python tools/bracket_table.py records it)")
        assert BRACKETS[key] == markers._compute_brackets()

    def test_recorded_entry_is_used_without_computing(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With an entry for this data, the first marker scan reads it and walks no Unicode table."""
        from ctxcore.kit import _bracket_table, markers

        monkeypatch.setattr(_bracket_table, "BRACKETS", {markers._bracket_data_key(): "[\u27e6"})
        monkeypatch.setattr(markers, "_compute_brackets", lambda: pytest.fail("computed despite a recorded entry"))
        assert markers._brackets() == "[\u27e6"

    def test_other_data_versions_are_computed(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An entry recorded for other Unicode or confusables data is ignored: the characters are computed."""
        from ctxcore.kit import _bracket_table, markers

        unidata, confusables = markers._bracket_data_key()
        other = {(unidata, confusables + ".other"): "[", (unidata + ".other", confusables): "["}
        monkeypatch.setattr(_bracket_table, "BRACKETS", other)
        assert markers._brackets() == markers._compute_brackets()
        assert len(markers._brackets()) > 1

    def test_the_tool_reads_back_what_it_writes(self) -> None:
        """tools/bracket_table.py parses the shipped table into the same entries the module holds (astral ones too)."""
        import importlib.util
        from pathlib import Path

        from ctxcore.kit._bracket_table import BRACKETS

        spec = importlib.util.spec_from_file_location("bracket_table", Path(__file__).parents[1] / "tools" / "bracket_table.py")
        assert spec is not None and spec.loader is not None
        tool = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tool)
        literal, read_table = tool.literal, tool.read_table

        assert read_table() == BRACKETS
        assert eval(literal('"\\\u27e6\U0001d114[')) == '"\\\u27e6\U0001d114['  # noqa: S307 - our own literal
