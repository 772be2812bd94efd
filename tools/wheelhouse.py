"""Fill a directory with the third-party wheels `ctxcore-llm[standard]` needs (for the offline wheel test).

``python tools/wheelhouse.py DIR`` reads the runtime dependencies of the core
and of the distributions its ``standard`` extra names from their
``pyproject.toml`` files and runs ``pip download`` for them into DIR (pip's
cache makes a second run quick). ``make test`` runs it before the suite, while
package registries are reachable; ``tests/test_wheels.py`` then installs from
the freshly built ctxcore wheels plus DIR with ``--no-index``, no network.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]


def distribution_dirs() -> dict[str, Path]:
    """Every shipped distribution (the core and plugins/*/*) by its name."""
    out = {}
    for pyproject in [ROOT / "pyproject.toml", *sorted(ROOT.glob("plugins/*/*/pyproject.toml"))]:
        name = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"]
        out[name] = pyproject.parent
    return out


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def third_party_requirements(extra: str = "standard") -> list[str]:
    """The non-ctxcore requirements of the core and of every distribution its ``extra`` pulls in, transitively."""
    dirs = distribution_dirs()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    todo = ["ctxcore-llm", *(_name(r) for r in project["optional-dependencies"][extra])]
    seen: set[str] = set()
    found: list[str] = []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        meta = tomllib.loads((dirs[name] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        for requirement in meta.get("dependencies", []):
            if _name(requirement) in dirs:
                todo.append(_name(requirement))
            elif requirement not in found:
                found.append(requirement)
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tools/wheelhouse.py DIR", file=sys.stderr)
        return 2
    dest = Path(argv[0])
    dest.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--dest", str(dest),
               *third_party_requirements()]
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
