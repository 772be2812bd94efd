"""The Python blocks of README.md and docs/*.md run as written.

Every fenced block whose language is ``python`` (or ``py``, ``python3``) runs.
A page's blocks run in page order in one namespace, so a block may use names
an earlier block of the page defined, in a fresh temporary directory holding a
copy of the repository's ``examples/`` (``examples/...`` paths work as they do
from the repository root, and a block may write files). The plugins are the
installed ones, loaded from their entry points, as a reader's are. A block may
use top-level ``await``, as in ``python -m asyncio``. Blocks are executed as
written: a function a block defines but never calls is only defined.

Two kinds of block do not run here:

- a block made only of pymdownx.snippets includes (``--8<-- "path"``): the
  included file is what is tested, by its own tests (the tutorial's scripts by
  tests/test_tutorial.py, the example plugins under examples/ by theirs);
- a block right after ``<!-- not-run: reason -->`` on the line before its fence,
  for code that cannot run here (a hosted model, a server, a fragment such as a
  signature listing). The reason is required; keep such markers rare;
- a block right after ``<!-- run-in: SUITE -->``: it needs a framework that only
  the venv of a framework integration has (docs/integrations.md), so the suite
  of that integration runs it (``run_suite_blocks``), not this one. SUITE is the
  integration's directory under plugins/integrations/ (``ctxcore-langchain``).

docs/tutorial/ holds no pages (tests/test_tutorial.py runs the tutorial).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import logging
import os
import re
import shutil
import socket
import sys
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog

from ctxcore.plugins import reset_default_host

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON = ("python", "py", "python3")

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_MARKER = re.compile(r"^[ \t]*<!--\s*not-run\b(?P<rest>.*)$")
_MARKER_REASON = re.compile(r"^:(?P<reason>.*?)-->[ \t]*$")
_RUN_IN = re.compile(r"^[ \t]*<!--\s*run-in:\s*(?P<suite>[a-z0-9][a-z0-9-]*)\s*-->[ \t]*$")
_SNIPPET = re.compile(r"""^[ \t]*-+8<-+[ \t]+(["']).+\1[ \t]*$""")
_SNIPPET_LIKE = re.compile(r"^[ \t]*;?-+8<-+")


@dataclass(frozen=True)
class Block:
    """One fenced Python block: ``line`` is the 1-based line of its opening fence."""

    line: int
    code: str
    not_run: str | None = None  # the marker's reason
    run_in: str | None = None  # the integration suite that runs it (a run-in marker), else None: this suite
    included: bool = False  # only snippet includes: the included file's tests cover it

    def runs_in(self, suite: str | None) -> bool:
        """Whether the suite ``suite`` (None: this one) executes the block."""
        return not (self.not_run or self.included) and self.run_in == suite


def _is_python(info: str) -> bool:
    words = info.strip().split()
    return bool(words) and words[0].lower() in PYTHON


def _closing(lines: list[str], start: int, fence: str) -> int | None:
    """Index of the line closing the fence opened at ``start`` (same character, at least as long)."""
    close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
    return next((j for j in range(start + 1, len(lines)) if close.match(lines[j])), None)


def _dedent(line: str, indent: int) -> str:
    """``line`` without up to ``indent`` leading spaces (the fence's own indentation, as in a list item)."""
    strip = len(line) - len(line.lstrip(" \t"))
    return line[min(strip, indent):]


def _marker_problem(lines: list[str], i: int, reason: str | None) -> str | None:
    """What is wrong with the not-run marker on line index ``i``, or None."""
    if reason is None:
        return f"line {i + 1}: malformed not-run marker; write <!-- not-run: <reason> --> on one line"
    if not reason:
        return f"line {i + 1}: not-run marker without a reason; write <!-- not-run: <reason> -->"
    fence = _FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
    if fence is None or not _is_python(fence["info"]):
        return f"line {i + 1}: a not-run marker must be on the line right before a ```python fence"
    return None


def extract(text: str) -> tuple[list[Block], list[str]]:
    """The Python blocks of a Markdown text, and the problems found (bad markers, unclosed fences, mixed includes)."""
    lines = text.splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    reasons: dict[int, str] = {}  # fence line index -> not-run reason
    suites: dict[int, str] = {}  # fence line index -> run-in suite
    i = 0
    while i < len(lines):
        run_in = _RUN_IN.match(lines[i])
        if run_in:
            fence = _FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
            if fence is None or not _is_python(fence["info"]):
                problems.append(f"line {i + 1}: a run-in marker must be on the line right before a ```python fence")
            else:
                suites[i + 1] = run_in["suite"]
            i += 1
            continue
        marker = _MARKER.match(lines[i])
        if marker:
            found = _MARKER_REASON.match(marker["rest"].strip())
            reason = found["reason"].strip() if found else None
            problem = _marker_problem(lines, i, reason)
            if problem:
                problems.append(problem)
            elif reason:
                reasons[i + 1] = reason
            i += 1
            continue
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = _closing(lines, i, fence["fence"])
        if end is None:
            problems.append(f"line {i + 1}: fence {fence['fence']} is never closed")
            break
        if _is_python(fence["info"]):
            body = [_dedent(line, len(fence["indent"])) for line in lines[i + 1:end]]
            code = "\n".join(body)
            filled = [line for line in body if line.strip()]
            included = bool(filled) and all(_SNIPPET.match(line) for line in filled)
            if not included and any(_SNIPPET_LIKE.match(line) for line in filled):
                problems.append(f"line {i + 1}: a block mixes --8<-- includes with code; "
                                "put the code in the included file or in a block of its own")
            blocks.append(Block(i + 1, code, reasons.get(i), suites.get(i), included))
        i = end + 1
    return blocks, problems


def _run_block(block: Block, path: Path, namespace: dict[str, object], loop: asyncio.AbstractEventLoop) -> str | None:
    """Run one block; None when it succeeds, else the exception and its traceback through the page's lines."""
    try:
        code = compile("\n" * block.line + block.code, str(path), "exec",
                       flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        result = eval(code, namespace)  # eval, not exec: a block with top-level await gives its coroutine
        if code.co_flags & inspect.CO_COROUTINE:
            loop.run_until_complete(result)
    except (Exception, SystemExit) as exc:
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None  # from the block's frame on, not this one
        details = "".join(traceback.format_exception(type(exc), exc, tb))
        return f"raised {type(exc).__name__}: {exc}\n\n{details}"
    return None


def run_page(name: str, path: Path, blocks: list[Block], suite: str | None = None) -> None:
    """Run the runnable ``blocks`` of page ``name`` in order in one fresh module; fail naming page, line and error.

    Each block is compiled with its page's line numbers and ``path`` as file
    name, so a traceback shows the Markdown lines themselves.
    """
    module = types.ModuleType(f"docs_page_{re.sub(r'[^0-9a-zA-Z]+', '_', name)}")
    sys.modules[module.__name__] = module  # dataclasses and pydantic look names up through it
    loop = asyncio.new_event_loop()
    try:
        for block in blocks:
            if not block.runs_in(suite):
                continue
            failure = _run_block(block, path, module.__dict__, loop)
            if failure:
                pytest.fail(f"{name}: the block at line {block.line} {failure}", pytrace=False)
    finally:
        loop.close()
        del sys.modules[module.__name__]


_LOOPBACK = ("127.0.0.1", "::1", "localhost")


def _record_bind(original: Callable[[socket.socket, Any], Any], bound: set[tuple[str, int]]) -> Callable[[socket.socket, Any], Any]:
    """``socket.bind`` remembering the loopback addresses this process listens on (a local stub a block starts)."""
    def bind(sock: socket.socket, address: Any) -> Any:
        result = original(sock, address)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            host, port = sock.getsockname()[:2]
            if host in _LOOPBACK:
                bound.add((host, port))
        return result
    return bind


def _refuse_network(original: Callable[[socket.socket, Any], Any], bound: set[tuple[str, int]]) -> Callable[[socket.socket, Any], Any]:
    """``socket.connect`` (or ``connect_ex``) refusing IP addresses: blocks must not reach a server (mark them not-run).

    The one exception is a loopback server the block started itself in this
    process (the local OpenAI/Anthropic stubs of docs/threads.md): nothing leaves the machine.
    """
    def connect(sock: socket.socket, address: Any) -> Any:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and tuple(address[:2]) not in bound:
            raise OSError(f"documentation blocks must not use the network (connect to {address!r})")
        return original(sock, address)
    return connect


@contextlib.contextmanager
def reader_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A reader's set-up: a fresh directory with a copy of examples/, the installed plugins, no CTX settings.

    Network connections fail, except to a loopback server a block started. Logging is put back afterwards, since
    docs/logging.md configures it for the process.
    """
    bound: set[tuple[str, int]] = set()
    monkeypatch.setattr(socket.socket, "bind", _record_bind(socket.socket.bind, bound))
    monkeypatch.setattr(socket.socket, "connect", _refuse_network(socket.socket.connect, bound))
    monkeypatch.setattr(socket.socket, "connect_ex", _refuse_network(socket.socket.connect_ex, bound))
    shutil.copytree(ROOT / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache"))
    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith(("CTX_", "CTXCORE_"))]:
        monkeypatch.delenv(key)  # conftest turns plugin autoload off; a reader's environment has it on
    reset_default_host()
    config, root = structlog.get_config(), logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield tmp_path
    finally:
        structlog.configure(**config)
        root.handlers[:] = handlers
        root.setLevel(level)
        reset_default_host()


@pytest.fixture
def reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """:func:`reader_setup` as a fixture."""
    with reader_setup(tmp_path, monkeypatch) as directory:
        yield directory


def run_suite_blocks(suite: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: str = "docs/integrations.md") -> int:
    """Run the blocks of ``page`` marked ``<!-- run-in: SUITE -->`` as a reader would; the number run.

    For the suites of plugins/integrations/*, which load this module by path
    (``importlib.util.spec_from_file_location``) from their own venvs.
    """
    path = ROOT / page
    blocks, problems = extract(path.read_text(encoding="utf-8"))
    assert not problems, f"{page}: " + "; ".join(problems)
    with reader_setup(tmp_path, monkeypatch):
        run_page(page, path, blocks, suite)
    return sum(b.runs_in(suite) for b in blocks)


def _page_name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


class TestPages:
    @pytest.mark.integration
    @pytest.mark.parametrize("page", PAGES, ids=_page_name)
    def test_python_blocks_run(self, page: Path, reader: Path) -> None:
        """Every Python block of the page runs, in order, in one namespace, without an exception."""
        blocks, problems = extract(page.read_text(encoding="utf-8"))
        assert not problems, f"{_page_name(page)}: " + "; ".join(problems)
        run_page(_page_name(page), page, blocks)

    def test_blocks_are_found(self) -> None:
        """The extractor sees the pages' code (plugins.md alone has at least five runnable blocks), so this suite tests something."""
        found = {_page_name(p): extract(p.read_text(encoding="utf-8"))[0] for p in PAGES}
        runnable = {name: [b for b in blocks if b.runs_in(None)] for name, blocks in found.items()}
        assert len(runnable["docs/plugins.md"]) >= 5
        assert sum(map(len, runnable.values())) >= 20
        assert sum(b.included for b in found["docs/plugins.md"]) >= 4  # the example plugin's files


class TestExtract:
    def test_python_blocks_with_their_fence_lines(self) -> None:
        """Only python/py fences are blocks, each with the line number of its opening fence."""
        text = "# Page\n\n```python\nx = 1\n```\n\n```bash\nls\n```\n\n```py title=a\ny = 2\n```\n\n```pycon\n>>> 1\n```\n"
        blocks, problems = extract(text)
        assert problems == []
        assert [(b.line, b.code) for b in blocks] == [(3, "x = 1"), (11, "y = 2")]

    def test_an_indented_fence_is_dedented(self) -> None:
        """A block inside a list item loses the fence's indentation, not the code's own."""
        blocks, _ = extract("- item:\n\n  ```python\n  if True:\n      x = 1\n  ```\n")
        assert blocks[0].code == "if True:\n    x = 1"

    def test_fences_inside_other_fences_are_text(self) -> None:
        """A python fence shown inside a longer markdown fence is not a block, nor is a marker there."""
        text = "````markdown\n<!-- not-run: shown -->\n```python\nx = 1\n```\n````\n"
        assert extract(text) == ([], [])

    def test_a_marker_with_a_reason_marks_the_next_block(self) -> None:
        """The reason of a marker on the line before the fence is the block's not_run."""
        blocks, problems = extract("<!-- not-run: calls a hosted model -->\n```python\nllm.invoke(x)\n```\n")
        assert problems == [] and blocks[0].not_run == "calls a hosted model"

    @pytest.mark.parametrize("marker", ["<!-- not-run: -->", "<!-- not-run:    -->", "<!-- not-run -->"])
    def test_a_marker_without_a_reason_is_a_problem(self, marker: str) -> None:
        """An empty reason, or none, is refused with the marker's line."""
        blocks, problems = extract(f"text\n{marker}\n```python\nx = 1\n```\n")
        assert len(problems) == 1 and problems[0].startswith("line 2: ") and "reason" in problems[0]
        assert blocks[0].not_run is None

    @pytest.mark.parametrize("after", ["\n```python\nx = 1\n```\n", "```bash\nls\n```\n", "Some text.\n", ""])
    def test_a_marker_not_right_before_a_python_fence_is_a_problem(self, after: str) -> None:
        """A blank line, another language, prose or the end of the page after a marker is refused."""
        _, problems = extract(f"<!-- not-run: a reason -->\n{after}")
        assert problems == ["line 1: a not-run marker must be on the line right before a ```python fence"]

    def test_a_block_of_snippet_includes_is_covered_elsewhere(self) -> None:
        """A block made only of --8<-- lines is marked included (its file's tests cover it)."""
        blocks, problems = extract('```python\n--8<-- "tutorial/tools.py:questions"\n\n--8<-- \'a.py\'\n```\n')
        assert problems == [] and blocks[0].included

    def test_a_block_mixing_includes_and_code_is_a_problem(self) -> None:
        """Code next to an include would run without what the include holds, so it is refused."""
        _, problems = extract('```python\n--8<-- "a.py"\nx = 1\n```\n')
        assert len(problems) == 1 and "mixes --8<-- includes with code" in problems[0]

    def test_a_run_in_marker_hands_the_block_to_that_suite(self) -> None:
        """A block after <!-- run-in: SUITE --> runs in that integration's suite, not in this one."""
        blocks, problems = extract("<!-- run-in: ctxcore-langchain -->\n```python\nimport langchain\n```\n")
        assert problems == [] and blocks[0].run_in == "ctxcore-langchain"
        assert blocks[0].runs_in("ctxcore-langchain") and not blocks[0].runs_in(None)

    def test_a_run_in_marker_not_before_a_python_fence_is_a_problem(self) -> None:
        """A run-in marker followed by prose is refused with its line."""
        _, problems = extract("<!-- run-in: ctxcore-langchain -->\nSome text.\n")
        assert problems == ["line 1: a run-in marker must be on the line right before a ```python fence"]

    def test_an_unclosed_fence_is_a_problem(self) -> None:
        """A fence that is never closed is reported rather than silently swallowing the rest of the page."""
        _, problems = extract("```python\nx = 1\n")
        assert problems == ["line 1: fence ``` is never closed"]


class TestRunPage:
    def _run(self, text: str, path: Path) -> None:
        path.write_text(text, encoding="utf-8")
        blocks, problems = extract(text)
        assert problems == []
        run_page("docs/page.md", path, blocks)

    def test_blocks_share_one_namespace_in_order(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A later block uses what an earlier one defined, and may write files in the working directory."""
        monkeypatch.chdir(tmp_path)
        self._run("```python\nfrom pathlib import Path\nx = 2\n```\n\n```python\nPath('out.txt').write_text(str(x * 21))\n```\n",
                  tmp_path / "page.md")
        assert (tmp_path / "out.txt").read_text() == "42"

    def test_a_failure_names_the_page_the_block_and_the_exception(self, tmp_path: Path) -> None:
        """The message says which page, which block (its fence line) and what was raised, with the Markdown line."""
        with pytest.raises(pytest.fail.Exception) as failed:
            self._run("# Page\n\n```python\nx = 1\n```\n\n```python\ny = 2\nundefined_name\n```\n", tmp_path / "page.md")
        message = str(failed.value)
        assert message.startswith("docs/page.md: the block at line 7 raised NameError: name 'undefined_name' is not defined")
        assert re.search(rf'File "{re.escape(str(tmp_path / "page.md"))}", line 9, in <module>\n +undefined_name\n', message)

    def test_a_syntax_error_names_the_line(self, tmp_path: Path) -> None:
        """A block that does not parse fails with the page's line number."""
        with pytest.raises(pytest.fail.Exception, match=r"^docs/page.md: the block at line 1 raised SyntaxError") as failed:
            self._run("```python\ndef f(x) -> int\n```\n", tmp_path / "page.md")
        assert "line 2" in str(failed.value)

    def test_not_run_and_included_blocks_are_skipped(self, tmp_path: Path) -> None:
        """A marked block and a block of includes are not executed."""
        self._run('<!-- not-run: a fragment -->\n```python\nraise RuntimeError\n```\n\n```python\n--8<-- "x.py"\n```\n',
                  tmp_path / "page.md")

    def test_the_network_is_refused(self, reader: Path) -> None:
        """A block connecting to a server fails (it would be marked not-run), so no page depends on one."""
        with pytest.raises(pytest.fail.Exception, match="raised OSError: documentation blocks must not use the network"):
            self._run("```python\nimport socket\nsocket.create_connection(('127.0.0.1', 9))\n```\n", reader / "page.md")

    def test_a_loopback_server_the_block_starts_is_reachable(self, reader: Path) -> None:
        """A block may talk to a server it started itself on 127.0.0.1 (the local stubs); nothing else opens."""
        self._run(
            "```python\nimport socket\nserver = socket.create_server(('127.0.0.1', 0))\n"
            "socket.create_connection(server.getsockname()).close()\nserver.close()\n```\n", reader / "page.md")

    def test_top_level_await_runs(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A block may await at top level, and a later block sees its result."""
        monkeypatch.chdir(tmp_path)
        self._run("```python\nimport asyncio\nx = await asyncio.sleep(0, result=5)\n```\n\n"
                  "```python\nopen('x.txt', 'w').write(str(x))\n```\n", tmp_path / "page.md")
        assert (tmp_path / "x.txt").read_text() == "5"
