"""Fault injection over the operator's day: the console never dies, shows the fault, and resumes.

Over SSH: the box is this machine behind a jump host (two real sshd servers, A -> B);
the service is the simulator, its log followed with `tail -F` over SSH and its HTTP
reached through the SSH port forward. GPU samples come from the simulator's own model
read on this machine (as the box's nvidia-smi would report them; the nvidia-smi path
has its own tests), so process hints and leftovers are real. The faults:

- "SSH cut": the box's per-connection sshd processes are SIGKILLed (the session dies);
- "sshd down": the box's sshd is stopped for SERVEDECK_FAULT_OUTAGE_S (default 6 s,
  past the SSH reconnect backoff's 3 s cap) and started again;
- "server killed": the simulated server's main process is SIGKILLed (on the local
  simulator, whose unit shows the death), then the service is started again.

One console walks the day and takes each fault at its step, so the suite costs one
load, not one per cell. Each cell records: survived, fault shown within 2 s, resumed
within 5 s of the host (or server) coming back. The matrix is printed (`pytest -s`)
and written to fault-matrix.md in the test's tmp dir (or SERVEDECK_FAULT_MATRIX).
At the end: no log line lost (the pane holds exactly the file's lines), no remote
`tail` or orphan left behind, and every failed action is in the audit log.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.console_support import box_profile, readable_sim_box
from tests.support.fault_matrix import (
    Day,
    FaultMatrix,
    SshDay,
    kill_outcomes,
    matrix_out,
    pane_lines,
    remote_tails,
)
from tests.support.sshd_fixtures import SshdPair
from tui.app import ServedeckApp, messages
from tui.compose import open_deck
from tui.core import paths
from tui.core.audit import read_audit
from tui.core.config import demo_profile
from tui.deck import Deck
from tui.hosts.ssh import SSHHost
from tui.ops.gpu_hints import deck_context
from tui.procs import list_gpu_processes
from tui.procs.kill import leftovers
from tui.screens.kill_confirm import KillConfirmation, KillConfirmScreen
from tui.screens.summary import SummaryScreen
from tui.sim.box import SimBox
from tui.sim.gpu_source import SimGpuSource
from widgets.host_overview import HostOverviewView
from widgets.summary_view import SummaryView

# Targets are 2 s (shown) and 5 s (resumed); a loaded CI machine may stretch both a little.
SLACK = float(os.environ.get("SERVEDECK_FAULT_SLACK", "1.5"))
LOAD_S = 20.0  # long enough for a cut and an outage inside the weights phase
ORPHANS = 2


# The fault matrices check times to show a fault and to resume: quiet (tests/support/quiet.py).
pytestmark = [pytest.mark.usefixtures("private_home"), pytest.mark.quiet]


@pytest.fixture
def readable_box() -> Iterator[SimBox]:
    """A stopped simulator any login user can read; two orphans on stop."""
    with readable_sim_box(
        "servedeck-faults-", seed=5, load_s=LOAD_S, orphans_on_stop=ORPHANS
    ) as box:
        yield box


class BoxOverSshDeck(Deck):
    """The simulated box reached as a plain SSH host. Its orphans are proven its leftovers by
    the (pid, start ticks) the box recorded starting, as SimDeck states them: a profile with
    no unit has no other proof, and this day is about faults, not about proof."""

    def __init__(self, box: SimBox, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._box = box

    def owned_processes(self) -> tuple[tuple[int, int], ...]:
        return tuple((pid, ticks) for pid, ticks, _role in self._box.started_processes())


@pytest.mark.sshd
async def test_faults_at_every_step_over_a_jump_host(
    sshd: SshdPair, readable_box: SimBox, tmp_path: Path
) -> None:
    box = readable_box
    config = sshd.jump_config(connect_timeout_s=5.0)
    profile = box_profile("faults", config, box)
    deck = BoxOverSshDeck(box, profile, SSHHost(config), _gpu_source=SimGpuSource(box))
    app = ServedeckApp(profile, deck)
    matrix = FaultMatrix()
    # 1. Connecting while the box's sshd is down.
    sshd.second.stop()
    started = time.monotonic()
    async with app.run_test(size=(140, 40)) as pilot:
        day = SshDay(pilot, app, matrix, sshd)
        await day.down_then_up("connecting", started, None, "")
        await day.until(lambda: app.last_gpu is not None, "a GPU sample")

        # 2. Loading: the connection is cut while shards load, then sshd goes down for
        # OUTAGE_S; the shards loaded meanwhile arrive once it is back (no line lost).
        box.start()
        await day.until(
            lambda: app.progress is not None and (app.progress.shards_done or 0) >= 1,
            "a shard loaded",
        )
        await day.cut("loading")
        shards_before = app.progress.shards_done if app.progress else 0
        await day.outage(
            "loading",
            back=lambda: (
                day.back()
                and app.progress is not None
                and (app.progress.shards_done or 0) > (shards_before or 0)
            ),
        )

        # 3. Waiting for readiness: cut as soon as the log says the HTTP server starts.
        await day.until(
            lambda: app.ready or (app.progress is not None and app.progress.http_starting),
            "the HTTP server starting",
        )
        note = "" if not app.ready else "the server was ready before the cut"
        await day.cut("waiting for readiness", note=note)
        await day.until(lambda: app.ready and app.serving.metrics is not None, "ready and metrics")

        # 4. Serving with metrics: cut, then sshd down; the metrics resume after each.

        async def stale_panes() -> None:
            """While the host is down: stale data with its age, the countdown in the header."""

            overview = app.query_one(HostOverviewView)

            def deck_note() -> str:
                return str(app.query_one("#deck-note").render())

            await day.until(
                lambda: "metrics lost" in deck_note() and "last contact" in overview.stale_note,
                "stale notes",
            )
            assert "(last sample " in deck_note(), deck_note()  # the age of what is shown
            assert app.serving.metrics is not None  # the last metrics stay on screen
            assert "retry in" in day.header.render().plain

        await day.cut(
            "serving", back=lambda: day.back() and not app.sources.health["metrics"].failing
        )
        await day.outage(
            "serving",
            back=lambda: day.back() and not app.sources.health["metrics"].failing,
            during=stale_panes,
        )

        # 5. Benchmark running: cut; the benchmark ends (its forward died), the console stays.
        app.action_bench("sweep")
        await day.until(lambda: app.bench.process is not None, "the benchmark start")
        await day.pause(1.0)
        await day.cut("benchmark running")
        if app.bench.process is not None:
            await pilot.press("c")
        await day.until(lambda: app.bench.process is None, "the benchmark end")
        # It ends as a failure or an incomplete run, never as "done".
        await day.until(
            lambda: any(
                n.title in ("Benchmark failed", "Benchmark incomplete") for n in app._notifications
            ),
            "the benchmark's failure notice",
            timeout_s=10,
        )
        assert not any(n.title == "Benchmark" for n in app._notifications)

        # 6. Stop: the service stops (leaving orphans) while the connection is cut.
        stopping = asyncio.create_task(asyncio.to_thread(box.stop))
        await day.cut("stop")
        await stopping
        await day.until(lambda: len(box.live_processes()) == ORPHANS, "the orphans")

        # 7. Leftovers listed on the Processes pane; cut while it polls.
        app.action_show_tab("procs")

        def listed() -> bool:
            return (
                app.procs.listing is not None
                and len(leftovers(app.procs.listing.processes)) == ORPHANS
            )

        await day.until(listed, "the leftovers listed")
        await day.cut(
            "leftovers listed",
            shown=lambda: day.lost() or app.sources.health["procs"].failing,
            back=lambda: day.back() and not app.sources.health["procs"].failing and listed(),
        )

        # 8. Kill dialog open: cut under the dialog, then cancel: nothing is killed.
        await pilot.press("K")
        await day.until(lambda: isinstance(app.screen, KillConfirmScreen), "the kill dialog")
        await day.cut("kill dialog open")
        modal = app.screen
        await day.until(
            lambda: modal.focused is not None and modal.focused.id == "kill-cancel", "the focus"
        )

        async def confirm_while_down() -> None:
            """Kill confirmed while the host is down: it fails, says so, signals nothing."""
            await pilot.press("shift+tab", "enter")
            await day.until(
                lambda: any(n.title == "Kill failed" for n in app._notifications), "the failure"
            )
            note = next(n.message for n in app._notifications if n.title == "Kill failed")
            assert "Nothing else was done" in note, note
            assert len(box.live_processes()) == ORPHANS

        await day.outage("kill dialog open", during=confirm_while_down)
        outcomes = [r for r in read_audit() if r["event"] == "kill-outcome"]
        assert outcomes and all(t["outcome"] == "error" for t in outcomes[-1]["outcomes"]), (
            outcomes[-1:]
        )

        # 9. Kill running: confirm, cut at once; retry with K if the kill failed.
        await pilot.press("K")
        await day.until(lambda: isinstance(app.screen, KillConfirmScreen), "the kill dialog")
        modal = app.screen
        await day.until(
            lambda: modal.focused is not None and modal.focused.id == "kill-cancel", "the focus"
        )
        outcomes_before = kill_outcomes()
        await pilot.press("shift+tab", "enter")
        await day.cut("kill running")
        await day.until(lambda: kill_outcomes() > outcomes_before, "the kill's outcome")
        if box.live_processes():  # the cut hit the kill: the operator asks again
            await pilot.press("K")
            await day.until(lambda: isinstance(app.screen, KillConfirmScreen), "the dialog")
            modal = app.screen
            await day.until(
                lambda: modal.focused is not None and modal.focused.id == "kill-cancel", "focus"
            )
            await pilot.press("shift+tab", "enter")
        await day.until(lambda: not box.live_processes(), "the orphans ended")

        # 10. Summary collecting: cut while `s` collects (once its screen is up: the first
        # `s` imports the Markdown renderer, which is not what is measured here).
        await pilot.press("s")
        await day.until(lambda: isinstance(app.screen, SummaryScreen), "the summary screen")
        await day.cut("summary collecting")
        summary = app.screen
        await day.until(
            lambda: (
                bool(summary.query_one(SummaryView).markdown)
                or "failed" in str(summary.query_one("#summary-status").render())
            ),
            "the summary or its failure",
        )
        await pilot.press("escape")

        # 11. Export: `E` collects and writes; cut while it does.
        folder = paths.data_dir() / "summaries"
        await pilot.press("E")
        await day.cut("export")
        await day.until(
            lambda: (
                any(folder.glob("summary-*.md"))
                or any(n.title == "Action failed" for n in app._notifications)
            ),
            "the export or its failure",
        )

        # No log line lost: the pane holds the file's lines, in order, once each.
        await day.until(
            lambda: pane_lines(app) == box.log_path.read_text().splitlines(),
            "the log pane to match the file",
            timeout_s=30,
        )
        assert day.alive()
    matrix_out(tmp_path, "Faults over SSH (jump host)", matrix)
    deadline = time.monotonic() + 15
    while remote_tails(box.log_path) and time.monotonic() < deadline:
        box.log_path.open("a").write("")  # nothing to read: the tails end on their own
        time.sleep(0.2)
    assert remote_tails(box.log_path) == [], "a remote tail was left behind"
    assert matrix.check(SLACK) == []


async def test_server_killed_at_each_step_on_the_simulator(tmp_path: Path) -> None:
    """The simulated server's main process dies while loading, serving and benchmarking."""
    deck = open_deck(demo_profile(), demo_load_s=3.0, demo_orphans_on_stop=0)
    box = deck.box
    assert isinstance(box, SimBox)
    app = ServedeckApp(deck.profile, deck)
    matrix = FaultMatrix()

    def unit_down() -> bool:
        state = app.unit_state
        return state is not None and not state.is_active

    def unit_up() -> bool:
        state = app.unit_state
        return state is not None and state.is_active

    async def kill_server(day: Day, step: str, back: Callable[[], bool] = unit_up) -> None:
        """SIGKILL the server's whole process group (a crash), then start the service again."""
        await day.until(unit_up, "the console seeing the unit up")
        started = time.monotonic()
        os.killpg(box.unit.main_pid, signal.SIGKILL)
        shown_s = await day.timed(unit_down, started, 10)
        box.start()
        restarted = time.monotonic()
        back_s = await day.timed(back, restarted, 30)
        day.record(step, "server killed", shown_s, back_s)

    try:
        async with app.run_test(size=(140, 40)) as pilot:
            day = Day(pilot, app, matrix)
            await day.until(lambda: app.unit_state is not None, "the unit's state")
            box.start()
            await day.until(
                lambda: app.progress is not None and (app.progress.shards_done or 0) >= 1,
                "a shard loaded",
            )
            await kill_server(day, "loading")
            await day.until(
                lambda: app.ready and app.serving.metrics is not None, "ready and metrics"
            )
            await kill_server(day, "serving")
            await day.until(lambda: app.ready and app.serving.metrics is not None, "ready again")
            app.action_bench("sweep")
            await day.until(lambda: app.bench.process is not None, "the benchmark start")
            await day.pause(1.0)
            bench = app.bench.process
            await kill_server(day, "benchmark running")
            if app.bench.process is bench and bench is not None:
                await pilot.press("c")
            await day.until(lambda: app.bench.process is None, "the benchmark end")
            assert day.alive()
    finally:
        box.close()
    matrix_out(tmp_path, "Server killed (simulator)", matrix)
    assert matrix.check(SLACK) == []


async def test_a_new_boot_id_voids_the_listing_and_the_kill_dialog(tmp_path: Path) -> None:
    """The host rebooting between the listing and the kill: nothing from the old boot is killed.

    A real reboot cannot be made here, so the listing "from before the reboot" is this
    machine's real listing of the simulator's real orphans with its boot id rewritten;
    the console's next poll then reads the real (new) boot id, as after a reboot.
    """
    deck = open_deck(
        demo_profile(),
        demo_load_s=2.0,
        demo_autostart=True,
        demo_wait_ready=True,
        demo_orphans_on_stop=ORPHANS,
    )
    box = deck.box
    assert isinstance(box, SimBox)
    matrix = FaultMatrix()
    try:
        box.stop()
        deadline = time.monotonic() + 60
        while len(box.live_processes()) < ORPHANS and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=(140, 40)) as pilot:
            day = Day(pilot, app, matrix)
            await day.until(lambda: app.last_gpu is not None and app.last_gpu.available, "GPUs")
            real = await list_gpu_processes(deck.host, app.last_gpu, await deck_context(deck))
            assert len(leftovers(real.processes)) == ORPHANS
            # The first GPU sample brings the console's own listing: played in after it, the
            # old boot's listing reads as a reboot too; the one that counts is the next.
            await day.until(lambda: app.procs.listing is not None, "the first listing")
            before = replace(
                real,
                boot_id="boot-before-the-reboot",
                processes=tuple(
                    replace(p, identity=replace(p.identity, boot_id="boot-before-the-reboot"))
                    for p in real.processes
                ),
            )
            app.on_servedeck_app_procs_update(messages.ProcsUpdate(before))
            old_targets = list(leftovers(before.processes))
            app.procs.confirm_kill(old_targets)
            await day.until(lambda: isinstance(app.screen, KillConfirmScreen), "the kill dialog")

            started = time.monotonic()
            seen_before = app.procs.rebooted_at_s
            app.action_show_tab("procs")  # the next listing reads the new boot id
            noticed_s = await day.timed(
                lambda: app.procs.rebooted_at_s not in (None, seen_before), started, 10
            )
            assert not isinstance(app.screen, KillConfirmScreen), "the old boot's dialog stayed"
            await day.until(
                lambda: any(n.title == "Host rebooted" for n in app._notifications), "the notice"
            )
            assert app.procs.listing is not None and app.procs.listing.boot_id == real.boot_id
            assert "host rebooted" in str(app.query_one("#procs-status").render())
            day.record("leftovers listed", "host rebooted (new boot id)", noticed_s, noticed_s)

            # A kill confirmed for the old boot's processes signals nothing on the new boot.
            outcomes_before = kill_outcomes()
            app.procs.kill(KillConfirmation(tuple(old_targets), frozenset()))
            await day.until(lambda: kill_outcomes() > outcomes_before, "the kill's outcome")
            last = [r for r in read_audit() if r["event"] == "kill-outcome"][-1]
            assert {o["outcome"] for o in last["outcomes"]} == {"gone"}, last
            assert all("rebooted" in o["detail"] for o in last["outcomes"]), last
            assert len(box.live_processes()) == ORPHANS
    finally:
        box.close()
    matrix_out(tmp_path, "Remote reboot (simulator, boot id rewritten)", matrix)
    assert matrix.check(SLACK) == []
