"""Wheels are the truth: build every distribution, install the one-line extra from those files alone, run the README.

Builds each shipped distribution's sdist and wheel (the wheel from the sdist,
so a file missing from the sdist fails here), checks what the wheels hold,
creates a new venv and installs ``ctxcore-llm[standard]`` with ``--no-index``
from the built files plus the third-party wheelhouse that ``make test`` fills
(``tools/wheelhouse.py``; ``CTXCORE_WHEELHOUSE`` names it), then runs every
``ctx`` line of the README's demo block with that venv's ``ctx``, with the
network unreachable (a dead proxy) and an empty tiktoken cache.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.wheelhouse import distribution_dirs  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WHEELHOUSE = Path(os.environ.get("CTXCORE_WHEELHOUSE", ROOT / ".venv" / "wheelhouse"))


def readme_demo_commands() -> list[str]:
    """The ``ctx`` lines of the README block after the ``wheel-demo`` marker."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- wheel-demo:[^>]*-->\n```\n(.*?)```", text, re.S)
    assert block, "README.md lost its <!-- wheel-demo: ... --> block"
    lines = block.group(1).replace("\\\n", " ").splitlines()  # a line ending in a backslash goes on
    return [" ".join(line.split()) for line in lines if line.startswith("ctx ")]


def _offline_env(tmp: Path) -> dict[str, str]:
    """The environment of the installed ``ctx``: no pip config, no proxy that works, an empty tiktoken cache."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "CTXCORE_", "PYTHON", "VIRTUAL_ENV", "TIKTOKEN_")) and k.lower() not in
           ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    dead = "http://127.0.0.1:9"  # the discard port: any download attempt fails at once
    (tmp / "tiktoken-cache").mkdir(exist_ok=True)
    return {**env, "PIP_CONFIG_FILE": os.devnull, "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "ALL_PROXY": dead,
            "TIKTOKEN_CACHE_DIR": str(tmp / "tiktoken-cache"), "COLUMNS": "100"}


_BUILD_LITTER = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")
# What the core's copy leaves out at the top level: the other distributions and what no wheel holds.
_NOT_CORE = {".git", ".venv", ".venv-demo", ".venv-mem0", "plugins", "examples", "tests", "docs", "bench", "site",
             "tools", "artifacts", ".ctx", ".hypothesis", ".pytest_cache"}


def _ignore(source: Path):  # type: ignore[no-untyped-def]
    def ignore(directory: str, names: list[str]) -> set[str]:
        skipped = set(_BUILD_LITTER(directory, names))
        if Path(directory) == ROOT:
            skipped |= _NOT_CORE & set(names)
        return skipped
    return ignore


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every distribution's sdist and wheel in one directory."""
    if not any(WHEELHOUSE.glob("pydantic-*.whl")):
        if os.environ.get("CI"):
            pytest.fail(f"no wheelhouse at {WHEELHOUSE}: run `make test` (it runs tools/wheelhouse.py first)")
        pytest.skip(f"no wheelhouse at {WHEELHOUSE} (make test fills it with tools/wheelhouse.py)")
    dist = tmp_path_factory.mktemp("dist")
    for name, source in distribution_dirs().items():
        work = tmp_path_factory.mktemp(name)
        tree = work / source.name  # build from a copy: the source tree gets no build/ or egg-info
        shutil.copytree(source, tree, ignore=_ignore(source))
        result = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(tree)],
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"{name}: {result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    return dist


@pytest.fixture(scope="module")
def installed(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv holding ``ctxcore-llm[standard]``, installed from the built files and the wheelhouse only."""
    home = tmp_path_factory.mktemp("venv") / "v"
    venv.create(home, with_pip=True, system_site_packages=False)
    result = subprocess.run(
        [str(home / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-index", "--find-links", str(built),
         "--find-links", str(WHEELHOUSE), "ctxcore-llm[standard]"],
        capture_output=True, text=True, env=_offline_env(home.parent), timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return home


def _wheel(built: Path, name: str) -> zipfile.ZipFile:
    (path,) = built.glob(f"{name.replace('-', '_')}-*.whl")
    return zipfile.ZipFile(path)


def _metadata(wheel: zipfile.ZipFile) -> dict[str, list[str]]:
    text = wheel.read(next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    msg = Parser().parsestr(text)
    return {key: msg.get_all(key) or [] for key in ("Name", "Requires-Dist", "Project-URL", "Provides-Extra")}


@pytest.mark.integration
class TestWheels:
    """What the built distributions hold and declare."""

    def test_every_distribution_has_a_wheel_and_an_sdist(self, built: Path) -> None:
        """Each shipped distribution produced one wheel and one sdist."""
        for name in distribution_dirs():
            stem = name.replace("-", "_")
            assert len(list(built.glob(f"{stem}-*.whl"))) == 1, name
            assert len(list(built.glob(f"{stem}-*.tar.gz"))) == 1, name

    def test_the_core_wheel_has_no_test_servers(self, built: Path) -> None:
        """The core wheel holds the library and contract suites, not ctxcore.testing.harness."""
        names = _wheel(built, "ctxcore-llm").namelist()
        assert "ctxcore/testing/contracts/checkpointer.py" in names
        assert not [n for n in names if n.startswith("ctxcore/testing/harness")]
        assert "ctxcore/tools/scaffold_templates/common/pyproject.toml.tmpl" in names

    def test_licence_urls_and_dependency_names(self, built: Path) -> None:
        """Every wheel carries the Apache-2.0 text and project URLs; plugins depend on ctxcore-llm, never on ctxcore."""
        for name in distribution_dirs():
            wheel = _wheel(built, name)
            licence = [n for n in wheel.namelist() if "dist-info" in n and "LICENSE" in n]
            assert licence and b"Apache License" in wheel.read(licence[0]), name
            meta = _metadata(wheel)
            assert meta["Project-URL"], name
            requires = [re.split(r"[\s\[<>=!~;(]", r, maxsplit=1)[0] for r in meta["Requires-Dist"]]
            assert "ctxcore" not in requires, name
            if name != "ctxcore-llm":
                assert "ctxcore-llm" in requires, name
        assert {"standard", "postgres", "huggingface", "mem0", "test"} <= set(_metadata(_wheel(built, "ctxcore-llm"))["Provides-Extra"])


@pytest.mark.integration
class TestOneLineInstall:
    """``pip install "ctxcore-llm[standard]"`` from the files alone runs the README's demo offline."""

    def test_the_readme_demo_runs(self, installed: Path, tmp_path: Path) -> None:
        """Every `ctx` line of the README demo block exits 0 in the new venv, with no network."""
        work = tmp_path / "work"
        shutil.copytree(ROOT / "examples", work / "examples",
                        ignore=shutil.ignore_patterns("ctxcore-example-*", "__pycache__"))
        env = _offline_env(tmp_path)
        commands = readme_demo_commands()
        assert len(commands) >= 5
        for line in commands:
            args = line.split()[1:]
            result = subprocess.run([str(installed / "bin" / "ctx"), *args], cwd=work, capture_output=True,
                                    text=True, env=env, timeout=300)
            assert result.returncode == 0, f"{line}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            assert "Traceback" not in result.stderr, line
        listing = subprocess.run([str(installed / "bin" / "ctx"), "plugins", "list", "--json"], cwd=work,
                                 capture_output=True, text=True, env=env, timeout=120).stdout
        for plugin in ("ctxcore-providers", "ctxcore-filters", "ctxcore-counters", "ctxcore-checkpointers", "ctxcore-memory"):
            assert f'"name": "{plugin}"' in listing
        assert not list((tmp_path / "tiktoken-cache").iterdir()), "tiktoken fetched or cached an encoding"

    def test_the_harness_is_not_installed(self, installed: Path, tmp_path: Path) -> None:
        """The installed core has ctxcore.testing (fresh_host, the suites) but no ctxcore.testing.harness."""
        probe = ("import importlib.util as u; import ctxcore.testing; "
                 "print(u.find_spec('ctxcore.testing.harness') is None)")
        result = subprocess.run([str(installed / "bin" / "python"), "-c", probe], cwd=tmp_path,
                                capture_output=True, text=True, env=_offline_env(tmp_path), timeout=120)
        assert result.stdout.strip() == "True", result.stderr
