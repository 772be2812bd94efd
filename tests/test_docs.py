"""Tests for the documentation: every hook and CLI command is documented, every link resolves."""

from __future__ import annotations

import importlib.util
import inspect
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from ctxcore.cli import cli
from ctxcore.plugins import hookspecs

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MARKDOWN = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]

# [text](target) not preceded by "!" is a link; images are checked the same way.
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def _headings(path: Path) -> set[str]:
    """The text of every level-3 heading of ``path``."""
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {m.group(1).strip() for m in re.finditer(r"^### (.+)$", text, re.MULTILINE)}


def _hookspecs() -> list[tuple[str, list[str]]]:
    """(name, parameter names) of every function marked with ctxcore's hookspec marker."""
    marker = f"{hookspecs.PROJECT_NAME}_spec"
    return [
        (name, list(inspect.signature(fn).parameters))
        for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(fn, marker)
    ]


def _commands(command: click.Command, path: tuple[str, ...] = ("ctx",)) -> list[str]:
    """Full paths (``ctx plugins list``) of ``command`` and every command below it."""
    found = [" ".join(path)]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            found.extend(_commands(sub, (*path, name)))
    return found


def _relative_links(path: Path) -> list[str]:
    """Link targets in ``path`` that are files of this repository (no URLs, no bare anchors)."""
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    targets = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def test_hookspecs_are_found() -> None:
    """The hookspec discovery sees the registration and observer hooks (guards the tests below)."""
    names = {name for name, _ in _hookspecs()}
    assert {"register_providers", "register_commands", "on_build_complete"} <= names


@pytest.mark.parametrize(("name", "params"), _hookspecs(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_hook_has_a_reference_heading(name: str, params: list[str]) -> None:
    """docs/plugins.md has a heading '### name(args)' with the hook's exact parameter names."""
    heading = f"{name}({', '.join(params)})"
    assert heading in _headings(DOCS / "plugins.md"), f"docs/plugins.md lacks '### {heading}'"


def test_cli_commands_are_found() -> None:
    """The command walk reaches nested commands (guards the test below)."""
    assert {"ctx", "ctx plugins list", "ctx pipeline validate", "ctx build", "ctx count"} <= set(_commands(cli))


@pytest.mark.parametrize("command", _commands(cli))
def test_every_cli_command_has_a_heading(command: str) -> None:
    """docs/cli.md has a heading '### ctx <full command path>' for every command and group."""
    assert command in _headings(DOCS / "cli.md"), f"docs/cli.md lacks '### {command}'"


@pytest.mark.parametrize("doc", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    """Every relative link in README.md and docs/*.md points to a file that exists."""
    missing = [t for t in _relative_links(doc) if t and not (doc.parent / t).exists()]
    assert not missing, f"{doc.relative_to(ROOT)}: broken links {missing}"


def _nav_pages(entries: object) -> list[str]:
    """Every page path in an mkdocs ``nav`` value (lists of ``{title: path-or-list}`` or bare paths)."""
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, list):
        return [page for entry in entries for page in _nav_pages(entry)]
    if isinstance(entries, dict):
        return [page for value in entries.values() for page in _nav_pages(value)]
    return []


def _site_pages() -> set[str]:
    """Markdown pages of the site: docs/**/*.md except docs/tutorial/ (the tutorial's code, not pages)."""
    return {
        p.relative_to(DOCS).as_posix()
        for p in DOCS.rglob("*.md")
        if p.relative_to(DOCS).parts[0] != "tutorial"
    }


def test_every_page_is_in_the_site_nav() -> None:
    """Every docs/**/*.md page is listed in mkdocs.yml's nav, and every nav entry exists (add new pages to nav)."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_pages(config["nav"])
    assert len(nav) == len(set(nav)), "a page is listed twice in mkdocs.yml nav"
    missing = sorted(_site_pages() - set(nav))
    assert not missing, f"add these pages to nav in mkdocs.yml: {missing}"
    unknown = sorted(set(nav) - _site_pages())
    assert not unknown, f"mkdocs.yml nav lists pages that do not exist: {unknown}"


def test_api_reference_covers_the_public_modules() -> None:
    """docs/api/ has a mkdocstrings page (a '::: module' line) for each public core module."""
    documented = {
        line[4:].strip()
        for page in (DOCS / "api").glob("*.md")
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("::: ")
    }
    public = {
        "ctxcore", "ctxcore.kit", "ctxcore.errors", "ctxcore.redaction",
        "ctxcore.model.messages", "ctxcore.model.transactions", "ctxcore.model.memory_item",
        "ctxcore.render", "ctxcore.render.target",
        "ctxcore.engine.protocols", "ctxcore.engine.budget", "ctxcore.engine.report", "ctxcore.engine.builder",
        "ctxcore.kit.checkpoints", "ctxcore.kit.memory", "ctxcore.runtime.memory_service",
        "ctxcore.pipeline.spec", "ctxcore.tools.replay", "ctxcore.testing", "ctxcore.testing.harness.openai_server",
    } | {f"ctxcore.testing.contracts.{p.stem}" for p in (ROOT / "ctxcore" / "testing" / "contracts").glob("[!_]*.py")}
    assert all(importlib.util.find_spec(name) for name in public)
    assert public <= documented, f"no API page for {sorted(public - documented)}"


class TestStrictSiteBuild:
    """mkdocs.yml's validation turns broken links and anchors into warnings, which --strict makes fatal."""

    def _build(self, tmp_path: Path, link: str) -> subprocess.CompletedProcess[str]:
        """Build a two-page site that inherits the repository's mkdocs.yml; index.md links with ``link``."""
        docs = tmp_path / "docs"
        docs.mkdir()
        (docs / "index.md").write_text(f"# Home\n\nSee [the other page]({link}).\n", encoding="utf-8")
        (docs / "other.md").write_text("# Other\n\n## A section\n\nText.\n", encoding="utf-8")
        (tmp_path / "mkdocs.yml").write_text(
            f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: docs\nnav: [index.md, other.md]\nplugins: [search]\n",
            encoding="utf-8",
        )
        mkdocs = Path(sys.executable).with_name("mkdocs")
        return subprocess.run([str(mkdocs), "build", "--strict", "-d", str(tmp_path / "site")], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)

    def test_good_link_builds(self, tmp_path: Path) -> None:
        """A link to an existing page and heading builds (guards the two tests below)."""
        done = self._build(tmp_path, "other.md#a-section")
        assert done.returncode == 0, done.stderr

    def test_broken_anchor_fails(self, tmp_path: Path) -> None:
        """A link to a heading that does not exist fails the strict build."""
        done = self._build(tmp_path, "other.md#no-such-section")
        assert done.returncode != 0 and "does not contain an anchor '#no-such-section'" in done.stderr

    def test_broken_link_fails(self, tmp_path: Path) -> None:
        """A link to a page that does not exist fails the strict build."""
        done = self._build(tmp_path, "missing.md")
        assert done.returncode != 0 and "'missing.md'" in done.stderr
