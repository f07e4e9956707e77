"""A real `servedeck serve` process and a real headless Chromium, for the browser tests.

The browser is the system's /usr/bin/chromium (Debian package `chromium`), driven by
Playwright; no browser is ever downloaded. The console's terminal draws on a canvas,
so the page's text is read from xterm.js's own screen buffer: an init script keeps a
reference to textual-serve's terminal object when its page creates it.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# textual-serve's page class assigns `this.fitAddon` right after creating its xterm
# Terminal: a setter on Object.prototype sees that assignment and keeps the instance.
KEEP_TERMINAL = """
window.__servedeckTerminals = [];
Object.defineProperty(Object.prototype, "fitAddon", {
  configurable: true,
  set(value) {
    Object.defineProperty(this, "fitAddon", {
      value, writable: true, configurable: true, enumerable: true,
    });
    window.__servedeckTerminals.push(this);
  },
});
"""
READ_SCREEN = """() => {
  const holder = window.__servedeckTerminals && window.__servedeckTerminals[0];
  if (!holder || !holder.terminal) return "";
  const terminal = holder.terminal, buffer = terminal.buffer.active, rows = [];
  for (let y = 0; y < terminal.rows; y++) {
    const line = buffer.getLine(buffer.viewportY + y);
    rows.push(line ? line.translateToString(true) : "");
  }
  return rows.join("\\n");
}"""


def require_chromium() -> Any:
    """Playwright's sync API, or a skip that says what is missing."""
    if not CHROMIUM.exists():
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    return pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra")


@contextmanager
def chromium(viewport: tuple[int, int] = (1400, 900)) -> Iterator[Any]:
    """A fresh headless Chromium profile (its own user-data-dir), as a browser context."""
    sync_api = require_chromium()
    profile_dir = tempfile.mkdtemp(prefix="servedeck-chromium-")
    try:
        with sync_api.sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                profile_dir,
                executable_path=str(CHROMIUM),
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": viewport[0], "height": viewport[1]},
            )
            context.add_init_script(KEEP_TERMINAL)
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile_dir, ignore_errors=True)


def screen_text(page: Any) -> str:
    return str(page.evaluate(READ_SCREEN))


def wait_screen(page: Any, predicate: Callable[[str], bool], timeout_s: float, what: str) -> str:
    """Poll the page's terminal until predicate holds (the machine may be loaded: be generous)."""
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        text = screen_text(page)
        if predicate(text):
            return text
        page.wait_for_timeout(200)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}; screen:\n{text}")


def press(page: Any, key: str) -> None:
    """A key into the terminal, as a person typing in the focused page would."""
    page.focus(".xterm-helper-textarea")
    page.keyboard.press(key)


# ----------------------------------------------------------------- the server process


def children(pid: int) -> list[int]:
    """Live direct children of pid, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        for child in children(stack.pop()):
            found.append(child)
            stack.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def wait_for(predicate: Callable[[], object], timeout_s: float, what: str) -> object:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(0.1)


class ServeProcess:
    """`python -m tui serve ...` on a free port; `url` is the printed URL with its token."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tui", "serve", "--port", "0", *args],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        )
        self.printed: list[str] = []
        self.url = self._read_url(timeout_s=60)
        self.base = self.url.split("?", 1)[0]
        self.token = self.url.split("token=", 1)[1]

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read_url(self, timeout_s: float) -> str:
        """The printed URL; stdout keeps being drained by a thread so it never fills."""
        lines: queue.Queue[str | None] = queue.Queue()

        def drain() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self.printed.append(line.rstrip("\n"))
                lines.put(line.rstrip("\n"))
            lines.put(None)

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                break
            match = re.search(r"open: (\S+)", line)
            if match:
                return match.group(1)
        err = self.stop()
        raise AssertionError(f"servedeck serve printed no URL: {self.printed} {err}")

    def consoles(self) -> list[int]:
        """The visitors' console processes: the server's children."""
        return children(self.pid)

    def stop(self) -> str:
        """SIGTERM (as Ctrl-C would), wait for the exit; returns what it wrote on stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            _out, err = self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _out, err = self.process.communicate()
        return err or ""
