"""`servedeck serve` in a real headless Chromium: the demo console renders, its panes
answer keys, actions are refused read-only, a closed tab leaves no process behind, a
visit without the token starts nothing, and a fifth visitor over a cap of four is
turned away with a clear page.

Real parts throughout: the server is `python -m tui serve` in its own process, each
visit runs a real console (the demo's with its own simulated box), and the browser is
the system's Chromium (tests/support/browser_support.py says how its terminal text is read).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.browser_support import (
    ServeProcess,
    alive,
    chromium,
    cmdline,
    descendants,
    press,
    require_chromium,
    screen_text,
    wait_for,
    wait_screen,
)

pytestmark = pytest.mark.browser

# Text only the given pane (1-5) shows.
PANE_MARKS = {
    "1": "Memory 5m",  # the GPU table's header
    "2": "Hostname",
    "3": "GPU process(es) on",
    "4": "No benchmark yet",
    "5": "weights per GPU",
}


def audit_records() -> list[dict[str, object]]:
    """The server's audit log and the demo console's own (a demo keeps its records apart)."""
    folder = Path(os.environ["SERVEDECK_LOG_DIR"])
    records: list[dict[str, object]] = []
    for path in (folder / "audit.jsonl", folder / "demo" / "audit.jsonl"):
        if path.exists():
            records += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return records


@contextmanager
def served(*args: str) -> Iterator[ServeProcess]:
    require_chromium()
    server = ServeProcess(*args)
    try:
        yield server
    finally:
        err = server.stop()
        assert server.token not in err, "the token never appears in the server's log"
    wait_for(lambda: not server.consoles(), 30, "every console to end with the server")


@pytest.fixture
def demo_server() -> Iterator[ServeProcess]:
    # A slow load: the strip stays on "loading weights" for the whole test.
    with served("--demo", "--load-seconds", "600") as server:
        yield server


@pytest.fixture
def local_server() -> Iterator[ServeProcess]:
    # The plain local console (no unit, no GPU here): the lightest console for counting visitors.
    with served("--max-visitors", "4") as server:
        yield server


def test_demo_console_in_chromium_reads_keys_refuses_actions_and_ends_with_the_tab(
    demo_server: ServeProcess,
) -> None:
    with chromium() as browser:
        page = browser.new_page()
        response = page.goto(demo_server.url)
        assert response is not None and response.status == 200
        screen = wait_screen(
            page,
            lambda s: "RTX PRO 6000" in s and "loading weights" in s and "shard" in s,
            120,
            "the GPU table and the load strip",
        )
        assert "browser, read-only" in screen  # the header says what this page can do
        gpu_rows = [line for line in screen.splitlines() if "RTX PRO 6000" in line]
        assert len(gpu_rows) == 8 and all("/95.6G" in row for row in gpu_rows)
        assert "Σ    8 GPUs" in screen
        strip = next(line for line in screen.splitlines() if "loading weights" in line)
        assert "shard" in strip and "/64" in strip and "%" in strip
        assert "token" not in page.url, "the token is taken out of the address bar"

        (console,) = demo_server.consoles()
        assert "--read-only" in cmdline(console), "read-only is forced without --allow-actions"

        for key in ["2", "3", "4", "5", "1"]:
            press(page, key)
            shown = wait_screen(page, lambda s, k=key: PANE_MARKS[k] in s, 60, f"pane {key}")
            others = [mark for other, mark in PANE_MARKS.items() if other != key and mark in shown]
            assert not others, f"pane {key} shows another pane's text: {others}"

        press(page, "?")  # the help screen, closed with a lone Escape (the parser's timeout path)
        wait_screen(page, lambda s: "Show the keys that work here" in s, 30, "the help screen")
        press(page, "Escape")
        wait_screen(
            page, lambda s: "Show the keys that work here" not in s, 30, "the help screen to close"
        )

        # Read-only offers no key that changes the host; X and K pressed anyway are refused
        # on screen (and audited below), never a dialog.
        press(page, "X")
        wait_screen(page, lambda s: "Stop (X) is refused" in s, 30, "X refused")
        press(page, "K")
        wait_screen(page, lambda s: "Clean up (K) is refused" in s, 30, "K refused")
        # Nor load on its server: a benchmark (b) and a capacity search (C) are refused too.
        press(page, "b")
        wait_screen(page, lambda s: "Bench (b) is refused" in s, 30, "b refused")
        press(page, "C")
        wait_screen(page, lambda s: "Capacity (C) is refused" in s, 30, "C refused")
        time.sleep(1.0)  # an absence: give a wrongly offered dialog time to appear
        screen = screen_text(page)
        assert "Stop vllm-kimi-k25-int4.service?" not in screen
        assert "activating" in screen or "active" in screen
        assert "deactivating" not in screen and "inactive" not in screen

        tree = descendants(console)
        assert len(tree) >= 10, "the demo's server, EngineCore and 8 workers run for this visit"
        page.close()
        wait_for(lambda: not alive(console), 60, "the console to end when its tab closed")
        wait_for(lambda: not any(alive(pid) for pid in tree), 30, "its simulated box to end")

    records = audit_records()
    events = [record["event"] for record in records]
    assert not [e for e in events if str(e).startswith(("service.", "kill.", "bench."))]
    refused = [r for r in records if r["event"] == "console.refused"]
    assert [r["pressed"] for r in refused] == ["X", "K", "b", "C"], refused
    assert all(r["via"] and r["reason"] == "read-only mode" for r in refused)
    start = next(r for r in records if r["event"] == "web.visit.start")
    end = next(r for r in records if r["event"] == "web.visit.end")
    assert start["pid"] == end["pid"] == console
    assert end["remote"] == "127.0.0.1" and end["started"] and end["ended"]
    assert end["exit_code"] == 0, "the console quit in order (no signal was needed)"
    assert demo_server.token not in json.dumps(records)


def test_without_the_token_chromium_gets_401_and_no_console_starts(
    demo_server: ServeProcess,
) -> None:
    with chromium() as browser:
        page = browser.new_page()
        for url in (demo_server.base, demo_server.base + "?token=not-the-token"):
            response = page.goto(url)
            assert response is not None and response.status == 401
            assert "Access token required" in page.inner_text("h1")
        page.wait_for_timeout(2000)  # time a wrongly started console would need to appear
        assert demo_server.consoles() == []
    assert not [r for r in audit_records() if r["event"] == "web.visit.start"]


def test_five_visitors_with_a_cap_of_four_the_fifth_gets_a_clear_page(
    local_server: ServeProcess,
) -> None:
    with chromium(viewport=(1000, 600)) as browser:
        pages = [browser.new_page() for _ in range(5)]
        for page in pages[:4]:
            response = page.goto(local_server.url)
            assert response is not None and response.status == 200
        fifth = pages[4].goto(local_server.url)
        assert fifth is not None and fifth.status == 503
        assert "Too many visitors" in pages[4].inner_text("h1")
        assert "at most 4" in pages[4].inner_text("body")
        for page in pages[:4]:
            wait_screen(page, lambda s: "browser, read-only" in s, 120, "a console per visitor")
        assert len(local_server.consoles()) == 4

        # A tab closes: its console ends and the slot is free again.
        first_console = set(local_server.consoles())
        pages[0].close()
        wait_for(lambda: len(local_server.consoles()) == 3, 60, "the closed tab's console to end")
        # The end record is written in the same step that frees the slot.
        wait_for(
            lambda: any(r["event"] == "web.visit.end" for r in audit_records()),
            60,
            "the visit's end",
        )
        response = pages[4].goto(local_server.url)
        assert response is not None and response.status == 200
        wait_screen(
            pages[4], lambda s: "browser, read-only" in s, 120, "the fifth visitor's console"
        )
        assert len(local_server.consoles()) == 4
        assert set(local_server.consoles()) - first_console, "the fifth visitor got a new console"

    refused = [r for r in audit_records() if r["event"] == "web.visit.refused"]
    assert len(refused) == 1 and refused[0]["reason"] == "full"


@pytest.fixture
def demo_server_with_actions() -> Iterator[ServeProcess]:
    with served("--demo", "--load-seconds", "600", "--allow-actions") as server:
        yield server


def test_with_allow_actions_a_stop_from_the_browser_is_confirmed_and_audited(
    demo_server_with_actions: ServeProcess,
) -> None:
    server = demo_server_with_actions
    with chromium() as browser:
        page = browser.new_page()
        page.goto(server.url)
        wait_screen(page, lambda s: "RTX PRO 6000" in s and "activating" in s, 120, "the demo")
        assert "browser, actions allowed" in screen_text(page)
        (console,) = server.consoles()
        assert "--read-only" not in cmdline(console)
        tree = descendants(console)  # before the stop: its workers are about to be orphaned

        press(page, "X")
        wait_screen(page, lambda s: "Stop vllm-kimi-k25-int4.service?" in s, 30, "the confirm")
        press(page, "Shift+Tab")  # from Cancel (focused first) to Stop
        press(page, "Enter")
        wait_screen(page, lambda s: "inactive" in s or "deactivating" in s, 60, "the stop")
        request = wait_for(
            lambda: [r for r in audit_records() if r["event"] == "service.request"],
            30,
            "the audited stop request",
        )
        assert request[0]["action"] == "stop"
        assert str(request[0]["via"]).startswith("browser 127.0.0.1 visit ")

        page.close()
        wait_for(lambda: not alive(console), 60, "the console to end when its tab closed")
        wait_for(lambda: not any(alive(pid) for pid in tree), 30, "its box, orphans included")


def test_a_console_that_cannot_start_shows_why_and_frees_its_slot(tmp_path: Path) -> None:
    profile = tmp_path / "box.toml"
    profile.write_text('[host]\nkind = "local"\n')
    with served("-p", str(profile), "--max-visitors", "1") as server:
        profile.unlink()  # the server checked it at start; each visit's console reads it again
        with chromium() as browser:
            page = browser.new_page()
            page.goto(server.url)
            page.wait_for_function(
                "() => document.body.classList.contains('-closed')", timeout=90_000
            )
            reason = page.inner_text("#ended-reason")
            assert reason.startswith("console exit 2: ") and reason.endswith("no such profile file")
            assert "has ended" in page.inner_text(".ended")
            wait_for(lambda: not server.consoles(), 30, "nothing left running")
            end = wait_for(
                lambda: [r for r in audit_records() if r["event"] == "web.visit.end"], 30, "end"
            )
            assert end[0]["exit_code"] == 2 and "no such profile file" in str(end[0]["error"])
            # Its slot is free again (the cap is one): the next visit gets a page, not "full".
            response = page.goto(server.url)
            assert response is not None and response.status == 200
