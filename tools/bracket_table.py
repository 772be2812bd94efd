"""Record the characters that open a runtime-context marker, per Unicode and confusables data version.

``python tools/bracket_table.py [PYTHON ...]`` computes ``ctxcore.kit.markers``'
opening characters (its ``_compute_brackets``: two walks of the BMP with
``unicodedata`` plus the confusable-homoglyphs table) under each interpreter
given (default: the running one) and writes them into
``ctxcore/kit/_bracket_table.py``, keyed by that interpreter's
``unicodedata.unidata_version`` and the confusable-homoglyphs version, keeping
the entries of other keys. The markers module uses an entry only when both
match, and computes the characters otherwise; ``tests/test_markers.py`` checks
the entry of the running interpreter against the computation.

``markers.py`` is loaded by its path and needs only the standard library and
confusable-homoglyphs, so any Python the package supports can run it:
``confusable_homoglyphs`` is found on the path of the interpreter running
this script and handed to the others through ``PYTHONPATH``.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKERS = ROOT / "ctxcore" / "kit" / "markers.py"
TABLE = ROOT / "ctxcore" / "kit" / "_bracket_table.py"

HEADER = '''"""The characters that open a runtime-context marker, recorded per data version (generated; do not edit).

Written by ``python tools/bracket_table.py``. Keys are (``unicodedata.unidata_version``,
confusable-homoglyphs version); ``ctxcore.kit.markers`` uses the entry of its own
key and computes the characters when there is none.
"""

from __future__ import annotations

'''


def compute_here() -> tuple[str, str, str]:
    """(Unicode version, confusables version, opening characters) under the running interpreter."""
    spec = importlib.util.spec_from_file_location("_ctxcore_markers_for_table", MARKERS)
    assert spec is not None and spec.loader is not None
    markers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(markers)
    unidata, confusables = markers._bracket_data_key()
    return unidata, confusables, markers._compute_brackets()


def compute_with(python: str) -> tuple[str, str, str]:
    """The same, computed by another interpreter running this script with ``--print``."""
    homoglyphs = importlib.util.find_spec("confusable_homoglyphs")
    if homoglyphs is None or homoglyphs.origin is None:
        raise SystemExit("confusable-homoglyphs is not importable by this interpreter")
    env = {**os.environ, "PYTHONPATH": str(Path(homoglyphs.origin).parents[1])}
    done = subprocess.run([python, __file__, "--print"], env=env, capture_output=True, text=True, check=True)
    unidata, confusables, brackets = json.loads(done.stdout)
    return unidata, confusables, brackets


def read_table() -> dict[tuple[str, str], str]:
    """The entries already recorded (none when the file does not exist yet)."""
    if not TABLE.exists():
        return {}
    tree = ast.parse(TABLE.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "BRACKETS":
            assert node.value is not None
            return dict(ast.literal_eval(node.value))
    return {}


def literal(text: str) -> str:
    """``text`` as an ASCII Python string literal: printable ASCII as is, every other character escaped."""
    def escape(c: str) -> str:
        if c.isascii() and c.isprintable() and c not in '"\\':
            return c
        return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"

    return '"' + "".join(map(escape, text)) + '"'


def write_table(entries: dict[tuple[str, str], str]) -> None:
    """Write every entry, sorted by key, as ASCII string literals."""
    lines = [HEADER, "BRACKETS: dict[tuple[str, str], str] = {\n"]
    for (unidata, confusables), brackets in sorted(entries.items()):
        chunks = [literal(brackets[i:i + 16]) for i in range(0, len(brackets), 16)] or ['""']
        body = "".join(f"        {chunk}\n" for chunk in chunks)
        lines.append(f"    ({json.dumps(unidata)}, {json.dumps(confusables)}): (\n{body}    ),\n")
    lines.append("}\n")
    TABLE.write_text("".join(lines), encoding="utf-8")


def main(argv: list[str]) -> int:
    if argv == ["--print"]:
        print(json.dumps(compute_here()))
        return 0
    entries = read_table()
    for unidata, confusables, brackets in [compute_with(p) for p in argv] if argv else [compute_here()]:
        entries[(unidata, confusables)] = brackets
        print(f"Unicode {unidata}, confusable-homoglyphs {confusables}: {len(brackets)} characters")
    write_table(entries)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
