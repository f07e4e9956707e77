"""Render screenshots/browser.png: `servedeck serve --demo` in a real headless Chromium,
taken mid-load (the page shows no address bar, and the token is never on screen).

Run from the repository root:  python screenshots/render_browser.py
Needs the system's chromium (/usr/bin/chromium) and Playwright (the test extra).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.browser_support import ServeProcess, chromium, wait_screen  # noqa: E402


def loaded_percent(screen: str) -> int:
    match = re.search(r"shard \d+/64 \S+\s+(\d+)%", screen)
    return int(match.group(1)) if match else 0


def main() -> int:
    scratch = Path(tempfile.mkdtemp(prefix="servedeck-shot-"))
    for name in ("CONFIG", "DATA", "LOG"):
        os.environ[f"SERVEDECK_{name}_DIR"] = str(scratch / name.lower())
    server = ServeProcess("--demo", "--load-seconds", "40")
    try:
        with chromium(viewport=(1280, 800)) as browser:
            page = browser.new_page()
            page.goto(server.url)
            screen = wait_screen(page, lambda s: loaded_percent(s) >= 45, 180, "the load at 45%")
            assert server.token not in screen
            page.wait_for_timeout(500)
            target = REPO / "screenshots" / "browser.png"
            page.screenshot(path=str(target))
            print(f"wrote {target.relative_to(REPO)}")
            page.close()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
