"""Tests for the sections provider: joining, trust boundaries, creation through the registry."""

from __future__ import annotations

import ctxcore_counters.plugin as counters_plugin
import ctxcore_providers.plugin as providers_plugin
import pytest
from ctxcore_providers import ArchivedSummary, Sections, StaticPrompt
from ctxcore_providers.memory import ArchivedSummaryConfig

from ctxcore import ConfigError, ImageBlock, Pipeline, human
from ctxcore.testing import fresh_host
from ctxcore.testing.contracts import ProviderContract


class Fixed:
    def __init__(self, *messages):
        self.messages = messages

    def get_messages(self, state, runtime):
        return self.messages


class TestJoining:
    def test_trusted_sections_become_one_system_message(self) -> None:
        """Trusted system sections are joined by the separator into one message."""
        [m] = Sections([StaticPrompt("A"), StaticPrompt("B"), StaticPrompt("C")]).get_messages({}, {})
        assert (m.role, m.text, m.trust) == ("system", "A\n\n---\n\nB\n\n---\n\nC", "trusted")

    def test_untrusted_section_never_joins_system(self) -> None:
        """An untrusted section splits the system text and stays a user-role block in order."""
        summary = ArchivedSummary(ArchivedSummaryConfig())
        out = Sections([StaticPrompt("A"), summary, StaticPrompt("B")], separator="\n--\n").get_messages({"archived_summary": "s"}, {})
        assert [(m.role, m.trust) for m in out] == [("system", "trusted"), ("user", "untrusted"), ("system", "trusted")]
        assert out[0].text == "A" and out[2].text == "B"

    def test_non_text_passes_through_and_output_reused(self) -> None:
        """Messages with blocks pass through; identical section output returns the same joined messages."""
        image = human([ImageBlock(url="data:image/png;base64,AA==")])
        p = Sections([StaticPrompt("A"), Fixed(image), StaticPrompt("B")])
        first = p.get_messages({}, {})
        assert first[1] is image and p.get_messages({}, {}) is first


class TestFromYaml:
    def host(self):
        return fresh_host(("providers", providers_plugin), ("counters", counters_plugin))

    def test_sections_created_by_the_pipeline(self) -> None:
        """Sections written as steps are created with their options; enabled: false leaves one out."""
        p = Pipeline.from_string(
            "version: 1\nproviders:\n  - type: sections\n    sections:\n      - {type: static_prompt, text: one}\n"
            "      - {type: static_prompt, text: skipped, enabled: false}\n      - {type: static_prompt, prompt: persona}\n",
            host=self.host())
        assert p.build({}).messages[0].text == "one\n\n---\n\nYou are a helpful assistant."

    def test_bad_section_is_located(self) -> None:
        """An unknown section type fails compiling and names sections[i]."""
        p = Pipeline.from_string("version: 1\nproviders:\n  - {type: sections, sections: [{type: nope}]}\n", host=self.host())
        with pytest.raises(ConfigError, match=r"sections\[0\] \(nope\): unknown provider 'nope'"):
            p.builder()

    def test_python_needs_providers(self) -> None:
        """Outside a pipeline, sections must be given provider objects."""
        from ctxcore_providers.sections import SectionsConfig, create_sections

        with pytest.raises(ValueError, match="created by a pipeline"):
            create_sections(SectionsConfig(sections=["history"]))


class TestSectionsContract(ProviderContract):
    """sections passes the provider contract."""

    def make_provider(self) -> Sections:
        return Sections([StaticPrompt("persona"), ArchivedSummary(ArchivedSummaryConfig(trust="trusted"))])

    def sample_state(self) -> dict:
        return {"archived_summary": "earlier"}
