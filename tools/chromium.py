"""Open ctx report pages in Debian's headless Chromium (driven by Playwright) and take screenshots.

Used by the report tests (tests/test_report_html.py, tests/test_replay_html.py) and by
`make screenshot`, which regenerates the README images:

    python tools/chromium.py examples/report-demo.yaml examples/report-state.json docs/img/report.png
    python tools/chromium.py --replay tests/data/replay-pipeline.yaml docs/img/replay.png

Playwright's own browser downloads are never used (no `playwright install`):
the browser is the system's ``/usr/bin/chromium`` (``make chromium`` installs
it), started with a fresh profile and its background networking switched off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = Path(os.environ.get("CTXCORE_CHROMIUM", "/usr/bin/chromium"))
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--font-render-hinting=none",
]
ROOT = Path(__file__).resolve().parents[1]


def missing() -> str | None:
    """Why the browser cannot run here, or ``None`` when it can."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing: run `make chromium` (as root, with apt-get) or set CTXCORE_CHROMIUM"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing: run `make install`"
    return None


@contextmanager
def browser_page(width: int = 1240, height: int = 900) -> Iterator[Any]:
    """A fresh page in headless Chromium with a throwaway profile; every request off the disk is refused."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="ctx-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=ARGS,
            viewport={"width": width, "height": height}, device_scale_factor=1, timeout=60_000,
        )
        try:
            context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file:", "data:"))
                          else route.abort())
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(30_000)
            yield page
        finally:
            context.close()


def build_report(pipeline: Path, state: Path, html: Path) -> None:
    """Run `ctx report --html` in a subprocess (the real CLI)."""
    subprocess.run(
        [sys.executable, "-m", "ctxcore", "report", str(pipeline), "--state", str(state), "--html", str(html)],
        check=True, cwd=ROOT,
    )


def screenshot(html: Path, png: Path) -> None:
    """Load ``html`` from disk and save a screenshot of it to ``png``, down to the decisions (the message table is long)."""
    with browser_page() as page:
        page.goto(html.resolve().as_uri())
        page.wait_for_selector("[data-testid=total-tokens]")
        box = page.locator(".grid2").bounding_box()
        png.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(png), full_page=True,
                        clip={"x": 0, "y": 0, "width": page.viewport_size["width"], "height": box["y"] + box["height"] + 12})


def replay_screenshot(pipeline: Path, png: Path) -> None:
    """`ctx replay --html` of the benchmark's coding-agent session (90 turns), screenshot with a call's report opened."""
    sys.path.insert(0, str(ROOT / "bench"))
    from workload import coding_agent_transcript

    with tempfile.TemporaryDirectory() as tmp:
        session, html = Path(tmp) / "session.json", Path(tmp) / "replay.html"
        session.write_text(json.dumps({"messages": coding_agent_transcript(90)}))
        subprocess.run([sys.executable, "-m", "ctxcore", "replay", str(session), "--pipeline", str(pipeline),
                        "--html", str(html)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        with browser_page() as page:
            page.goto(html.resolve().as_uri())
            page.wait_for_selector("body[data-ready='1']")
            page.get_by_test_id("call").nth(12).click()
            page.evaluate("window.scrollTo(0, 0)")
            box = page.locator("#call-report .bar").bounding_box()
            png.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(png), full_page=True,
                            clip={"x": 0, "y": 0, "width": page.viewport_size["width"], "height": box["y"] + box["height"] + 40})


def main(argv: list[str]) -> int:
    """`tools/chromium.py PIPELINE STATE OUT.png` (the report) or `--replay PIPELINE OUT.png` (the replay page)."""
    if argv[:1] == ["--replay"] and len(argv) == 3:
        reason = missing()
        if reason:
            print(f"error: {reason}", file=sys.stderr)
            return 1
        replay_screenshot(Path(argv[1]), Path(argv[2]))
        print(f"wrote {argv[2]}")
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    reason = missing()
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 1
    pipeline, state, png = (Path(a) for a in argv)
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "report.html"
        build_report(pipeline, state, html)
        screenshot(html, png)
    print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
