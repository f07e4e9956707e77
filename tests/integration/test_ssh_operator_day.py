"""The operator's day over SSH: the console on a box behind a jump host, driven with Pilot.

The box is this machine reached through two real sshd servers (jump A -> B), logged
into as the zsh login-shell user where the tests run as root (else as the current
user). The service is a simulator the test starts: its log is followed with
`tail -F` over SSH and its loopback HTTP server is reached only through the SSH
port forward. The profile names no unit, so "start the service" is the test
starting the simulator, as the operator would on the box.

A secret is planted in the env var the profile's api_key_env names and in the
server's command line (`--api-key`, as vLLM takes it); the simulator has no such
flag, so a small launcher drops it before running the server, leaving it in
/proc/PID/cmdline where a summary could find it. Each step's wall time is printed
(`pytest -s`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.console_support import box_profile, readable_sim_box
from tests.support.sim_fixtures import FAST_OPTIONS
from tests.support.sshd_fixtures import SshdPair
from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core import paths
from tui.screens.summary import SummaryScreen
from tui.serving.load.tracker import LOADING_ORDER
from tui.sim.box import SimBox
from widgets.load_strip import LoadStrip, render_strip
from widgets.summary_view import SummaryView

pytestmark = [pytest.mark.sshd, pytest.mark.usefixtures("private_home")]

API_KEY_ENV = "SERVEDECK_DAY_TEST_KEY"
API_KEY = "plain-value-no-pattern-D4y"  # matches no pattern: only the env lookup can catch it
CMDLINE_SECRET = "sk-dayCmdlineSECRET0123456789abcd"
LOAD_S = 15.0
STEP_TIMEOUT_S = 120.0
# Runs the simulator server with `--api-key SECRET` left in its /proc/PID/cmdline.
_LAUNCHER = (
    "import runpy, sys; del sys.argv[1:3]; "
    "runpy.run_module('tui.sim.server', run_name='__main__', alter_sys=True)"
)


class _KeyedSimBox(SimBox):
    """A SimBox whose server command line carries an API key, like `vllm serve --api-key`."""

    def server_argv(self) -> list[str]:
        argv = super().server_argv()
        assert argv[1:3] == ["-m", "tui.sim.server"]
        return [argv[0], "-c", _LAUNCHER, "--api-key", CMDLINE_SECRET, *argv[3:]]


@pytest.fixture
def world_readable_box() -> Iterator[SimBox]:
    """A stopped simulator whose state dir (log included) the zsh user can read."""
    with readable_sim_box("servedeck-day-", seed=3, load_s=LOAD_S, box_type=_KeyedSimBox) as box:
        yield box


async def _until(pilot: object, predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.1)  # type: ignore[attr-defined]


async def test_operator_day_over_a_jump_host(
    sshd: SshdPair, world_readable_box: SimBox, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = world_readable_box
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    user = sshd.zsh_user or sshd.user
    profile = box_profile("day-over-ssh", sshd.jump_config(user=user), box, API_KEY_ENV)
    deck = open_deck(profile)
    app = ServedeckApp(deck.profile, deck)
    times: dict[str, float] = {}
    async with app.run_test(size=(140, 40)) as pilot:
        strip = app.query_one(LoadStrip)

        # 1. The service is stopped: the console reaches the box; nothing loads, nothing serves.
        started = time.monotonic()
        await _until(pilot, lambda: app.query_one("#header").connection_state == "connected",
                     "the overview over SSH")  # fmt: skip
        assert box.unit.state == "inactive"
        assert not app.ready and app.serving.metrics is None
        assert app.progress is None or not app.progress.is_loading
        times["1 stopped"] = time.monotonic() - started

        # 2. Start the service: the load progresses through its phases, shard k/N and an ETA.
        started = time.monotonic()
        box.start()
        phases: list[str] = []
        shard_texts: list[str] = []

        def watch_load() -> bool:
            progress = strip.progress
            if progress is not None:
                if not phases or phases[-1] != progress.phase:
                    phases.append(progress.phase)
                text = render_strip(progress, strip.metrics, ready=strip.ready).plain
                if "shard " in text and "ready in about " in text:
                    shard_texts.append(text)
            return app.progress is not None and app.progress.phase == "serving"

        await _until(pilot, watch_load, "the serving phase")
        if phases[0] == "stopped":  # what the strip said before the first load line
            phases.pop(0)
        assert phases[0] in ("starting", "weights") and phases[-1] == "serving", phases
        ranks = [LOADING_ORDER.index(phase) for phase in phases]  # type: ignore[arg-type]
        assert ranks == sorted(ranks) and len(phases) >= 3, phases
        assert shard_texts, "no shard k/N with a ready time was shown"
        total = FAST_OPTIONS.shards
        assert any(f"/{total} " in text for text in shard_texts)
        shown = {int(text.split("shard ")[1].split("/")[0]) for text in shard_texts}
        assert len(shown) >= 2 and max(shown) <= total, shown  # k moved while loading
        times["2 load"] = time.monotonic() - started

        # 3. The ready notification arrives and the metrics appear (through the SSH forward).
        started = time.monotonic()
        await _until(
            pilot, lambda: app.ready and app.serving.metrics is not None, "ready and metrics"
        )
        titles = [notification.title for notification in app._notifications]
        assert "Ready" in titles
        assert app.serving.metrics is not None and app.serving.metrics.source
        await _until(pilot, lambda: strip.metrics is not None, "metrics in the load strip")
        url = await deck.reachable_base_url()
        assert url != box.base_url  # the console talks to the forward, not the box's port
        times["3 ready"] = time.monotonic() - started

        # 7. The summary: `s` previews it, `e` exports it; the load timeline, no secret.
        started = time.monotonic()
        await pilot.press("s")

        def summary_shown() -> bool:
            screen = app.screen
            return isinstance(screen, SummaryScreen) and bool(
                screen.query_one(SummaryView).markdown
            )

        await _until(pilot, summary_shown, "the summary preview")
        markdown = app.screen.query_one(SummaryView).markdown
        await pilot.press("e")
        folder = paths.data_dir() / "summaries"
        await _until(pilot, lambda: any(folder.glob("summary-*.md")), "the exported file")
        times["7 summary"] = time.monotonic() - started
        await pilot.press("escape")

    (exported,) = folder.glob("summary-*.md")
    text = exported.read_text()
    assert text == markdown
    assert "### Load timeline" in text
    timeline = text.split("### Load timeline", 1)[1]
    assert "weights" in timeline and "serving" in timeline
    assert CMDLINE_SECRET in Path(f"/proc/{box.unit.main_pid}/cmdline").read_text()
    for secret in (API_KEY, CMDLINE_SECRET):
        assert secret not in text
    print(f"\noperator's day over {profile.host.route} as {user}: " + ", ".join(
        f"{step} {seconds:.1f} s" for step, seconds in times.items()
    ))  # fmt: skip
