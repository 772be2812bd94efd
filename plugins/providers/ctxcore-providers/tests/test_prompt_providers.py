"""Tests for static_prompt (named prompts), tools_desc, identity and skills."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctxcore_providers import (
    Identity,
    Skills,
    SkillsCatalog,
    SkillsConfig,
    StaticPrompt,
    ToolsDesc,
    render_tools,
)
from ctxcore_providers.static_prompt import StaticPromptConfig
from pydantic import ValidationError

from ctxcore.kit import DEFAULT_PROMPTS, PipelineContext, use_pipeline_context
from ctxcore.testing.contracts import ProviderContract

READ_FILE = {"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                              "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                                                                                              "limit": {"type": ["integer", "null"]}},
                                                             "required": ["path"]}}}


class TestStaticPromptNames:
    def test_named_prompt_and_override(self) -> None:
        """prompt: NAME uses the default text, or the pipeline's override while it compiles."""
        assert StaticPromptConfig(prompt="persona").resolved_text() == DEFAULT_PROMPTS["persona"]
        with use_pipeline_context(PipelineContext(prompts={"persona": "You are Ada."})):
            assert StaticPromptConfig(prompt="persona").resolved_text() == "You are Ada."

    @pytest.mark.parametrize("options", [{}, {"text": "x", "prompt": "persona"}, {"prompt": "nope"}])
    def test_exactly_one_known_source(self, options: dict) -> None:
        """text xor prompt, and the prompt name must exist."""
        with pytest.raises(ValidationError):
            StaticPromptConfig(**options)

    def test_empty_override_emits_nothing(self) -> None:
        """A prompt overridden to '' leaves the message out."""
        assert StaticPrompt("", allow_empty=True).get_messages({}, {}) == ()


class TestToolsDesc:
    def test_preformatted_block_with_default_template(self) -> None:
        """A preformatted block is wrapped as 'Available tools:\\n{tools_desc}'."""
        [m] = ToolsDesc("- calculator: arithmetic").get_messages({}, {})
        assert (m.role, m.text) == ("system", "Available tools:\n- calculator: arithmetic")

    def test_renders_json_schema_tools(self) -> None:
        """OpenAI-style, flat and Anthropic-style definitions render with parameters and required marks."""
        flat = {"name": "grep", "description": "Search  text.", "input_schema": {"properties": {"pattern": {"type": "string"}}}}
        assert render_tools([READ_FILE, flat, {"name": "now"}]) == (
            "- read_file: Read a file.\n  parameters: path (string, required), limit (integer|null)\n"
            "- grep: Search text.\n  parameters: pattern (string)\n- now"
        )

    def test_reads_state_and_reuses_rendering(self) -> None:
        """Without text/tools the block comes from state['tools'] and is reused while the list is equal."""
        p = ToolsDesc()
        first = p.get_messages({"tools": [READ_FILE]}, {})
        assert p.get_messages({"tools": [dict(READ_FILE)]}, {}) is first
        assert p.get_messages({}, {}) == () and p.get_messages({"tools": []}, {}) == ()

    def test_custom_template_and_errors(self) -> None:
        """The template is overridable; it must keep {tools_desc}; a nameless tool is an error."""
        [m] = ToolsDesc("x", template="Tools:\n{tools_desc}\nUse them.").get_messages({}, {})
        assert m.text == "Tools:\nx\nUse them."
        with pytest.raises(ValueError, match="tools_desc"):
            ToolsDesc("x", template="no placeholder")
        with pytest.raises(ValueError, match=r"tools\[0\] has no 'name'"):
            render_tools([{"description": "?"}])


class TestIdentity:
    def test_contents_and_no_clock(self, tmp_path: Path) -> None:
        """Workspace (absolute), OS, Python and channel are shown; no time value, so it never changes."""
        [m] = Identity(tmp_path, "cli").get_messages({}, {})
        assert f"Workspace: {tmp_path.resolve()}" in m.text and "Operating system:" in m.text and "Python: 3." in m.text
        assert "Channel: cli" in m.text and "Time" not in m.text

    def test_channel_hints(self, tmp_path: Path) -> None:
        """Messaging and plain-text channels get a formatting hint; the runtime channel wins."""
        p = Identity(tmp_path, "cli", format_hints={"matrix": "Use Matrix HTML."})
        assert "Formatting:" not in p.get_messages({}, {})[0].text
        assert "no Markdown" in p.get_messages({}, {"channel": "sms"})[0].text
        assert "short" in p.get_messages({}, {"channel": "telegram"})[0].text
        assert "Use Matrix HTML." in p.get_messages({}, {"channel": "matrix"})[0].text


def skill(root: Path, name: str, front: str, body: str = "Do it.") -> Path:
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(f"---\n{front}\n---\n{body}\n")
    return d


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    builtin, ws = tmp_path / "builtin", tmp_path / "ws" / "skills"
    skill(builtin, "git", "name: git\ndescription: Builtin git.\nalways: true", "Commit often.")
    skill(builtin, "pdf", "name: pdf\ndescription: Read PDFs.\nrequires: {bins: [pdftotext-missing], env: [PDF_KEY]}")
    skill(ws, "git", "name: git\ndescription: Workspace git.\nalways: true", "Rebase, never merge.")
    d = skill(ws, "deploy", "name: deploy\ndescription: Deploy the app.", "Run make deploy.")
    (d / "scripts").mkdir()
    (d / "scripts" / "deploy.sh").write_text("echo deploy")
    skill(ws, "old", "name: old\ndescription: Disabled one.")
    return builtin, ws


def make_skills(dirs: tuple[Path, Path], **options) -> Skills:
    builtin, ws = dirs
    catalog = SkillsCatalog([("builtin", builtin), ("workspace", ws)], disabled=["old"], env={}, which=lambda b: None)
    return Skills(SkillsConfig(catalog=catalog, **options))


class TestSkills:
    def test_catalog_shadowing_disabled_requirements(self, dirs) -> None:
        """Workspace skills shadow built-in ones; disabled are gone; unmet requirements are listed."""
        skills = {s.name: s for s in make_skills(dirs).catalog.skills()}
        assert sorted(skills) == ["deploy", "git", "pdf"]
        assert skills["git"].body == "Rebase, never merge." and skills["git"].origin == "workspace"
        assert skills["pdf"].missing() == "missing bins: pdftotext-missing; missing env: PDF_KEY"

    def test_summary_with_file_read_tool(self, dirs) -> None:
        """Summary + read tool: on-demand policy, index with paths, unavailable marked; active skill in full."""
        active, block = make_skills(dirs, tools=["read_file"]).get_messages({}, {})
        assert active.text.startswith("# Active Skills\n\n### git\n\nRebase, never merge.")
        assert DEFAULT_PROMPTS["skill_on_demand_policy"] in block.text
        assert "Skill instructions:" not in block.text
        assert "- **deploy**: Deploy the app. (" in block.text
        assert "- **pdf**: Read PDFs." in block.text and "unavailable: missing bins: pdftotext-missing; missing env: PDF_KEY" in block.text
        assert "**git**" not in block.text  # always-on skills are not indexed again

    def test_summary_without_read_tool_inlines(self, dirs) -> None:
        """Without a file-read tool: fallback policy and available skills' instructions inline."""
        _, block = make_skills(dirs, tools=["shell"]).get_messages({}, {})
        assert DEFAULT_PROMPTS["skill_fallback_policy"] in block.text
        assert "Skill instructions:\n\n### deploy\n\nRun make deploy." in block.text
        assert "### pdf" not in block.text  # unavailable: not inlined
        assert "Resources (under " in block.text and "- scripts/deploy.sh" in block.text

    def test_full_mode_and_tools_from_state(self, dirs) -> None:
        """full mode inlines instructions even with a read tool (tools read from state)."""
        _, block = make_skills(dirs, mode="full").get_messages({"tools": [READ_FILE]}, {})
        assert "Skill instructions:" in block.text and DEFAULT_PROMPTS["skill_on_demand_policy"] not in block.text

    def test_toggles_select_and_path_map(self, dirs) -> None:
        """include_active/include_summary toggle the parts; select limits; path_map rewrites shown paths."""
        builtin, ws = dirs
        [block] = make_skills(dirs, include_active=False, select=["deploy"], path_map={str(ws): "/mnt/skills"},
                              tools=["read_file"]).get_messages({}, {})
        assert "- **deploy**: Deploy the app. (/mnt/skills/deploy/SKILL.md)" in block.text and "pdf" not in block.text
        [active] = make_skills(dirs, include_summary=False).get_messages({}, {})
        assert active.text.startswith("# Active Skills")

    def test_catalog_cache_follows_files(self, dirs) -> None:
        """The catalog is re-read when a SKILL.md changes or a skill appears, not otherwise."""
        p = make_skills(dirs, tools=["read_file"])
        first = p.get_messages({}, {})
        assert p.get_messages({}, {}) is first and p.catalog.cache.renders == 1
        skill(dirs[1], "new", "name: new\ndescription: Brand new.")
        assert "**new**" in p.get_messages({}, {})[1].text

    def test_bad_front_matter_reported(self, tmp_path: Path) -> None:
        """A SKILL.md without front matter is skipped and its error kept on the catalog."""
        (tmp_path / "x").mkdir()
        (tmp_path / "x" / "SKILL.md").write_text("no front matter")
        catalog = SkillsCatalog([tmp_path])
        assert catalog.skills() == [] and "front matter" in catalog.errors[0]


class TestToolsDescContract(ProviderContract):
    """tools_desc passes the provider contract."""

    def make_provider(self) -> ToolsDesc:
        return ToolsDesc()

    def sample_state(self) -> dict:
        return {"tools": [READ_FILE]}


class TestIdentityContract(ProviderContract):
    """identity passes the provider contract."""

    def make_provider(self) -> Identity:
        return Identity(".", "telegram")


class TestSkillsContract(ProviderContract):
    """skills passes the provider contract (empty directory)."""

    def make_provider(self) -> Skills:
        return Skills(SkillsConfig(skills_dir=str(Path(__file__).parent / "no-skills-here")))


def test_identity_template_with_braces(tmp_path: Path) -> None:
    """A custom identity template may contain other braces; only the three placeholders are filled."""
    [m] = Identity(tmp_path, template="cwd={workspace} json={\"a\": 1}").get_messages({}, {})
    assert m.text == f'cwd={tmp_path.resolve()} json={{"a": 1}}'.replace("{{", "{").replace("}}", "}")
