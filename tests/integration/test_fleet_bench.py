"""The quick benchmark on one fleet host, from the Fleet pane, over real sshd.

Two light boxes behind real OpenSSH servers (one through a jump host), both pointing at
one real simulator HTTP server reached through each host's own SSH port forward. `b`
asks first (cancel runs nothing), a confirmed run sends its requests through the forward
and reports them, the run is audited and kept in the bench history, and a read-only
fleet refuses (audited) before asking.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Button

from tests.support.fleet_fixtures import SshdFleet, fleet_collector, running_fleet
from tests.support.sim_fixtures import serving_box  # noqa: F401  (fixture)
from tests.support.sshd_fixtures import SshdPair, sshd_pair  # noqa: F401  (fixture)
from tests.support.waiting import pilot_wait
from tui.app.fleet_app import FleetApp
from tui.bench.history import history_path
from tui.core.audit import read_audit
from tui.fleet.bench_action import plan_bench, run_bench_on_host
from tui.fleet.deck_probe import DeckProbe
from tui.screens.confirm_bench import ConfirmBenchScreen
from tui.sim.box import SimBox

pytestmark = pytest.mark.sshd

HOST_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def serving_pair(
    sshd_pair: SshdPair,  # noqa: F811
    serving_box: SimBox,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SshdFleet]:
    with running_fleet(
        sshd_pair, serving_box.base_url, tmp_path_factory.mktemp("fleet"), ("serving", "serving")
    ) as fleet:
        yield fleet


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


async def test_bench_one_host_from_the_fleet_confirmed_audited_and_kept(
    serving_pair: SshdFleet, tmp_path: Path
) -> None:
    host = serving_pair.hosts[1]  # the one behind the jump host
    collector = fleet_collector(serving_pair, tmp_path)
    app = FleetApp(collector, interval_s=0.5)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot_wait(pilot, lambda: app.refreshes >= 1 and app.rows, "a first refresh")
            await pilot.press("slash", *host.name, "enter")
            table = app.query_one("FleetTable")
            await pilot_wait(pilot, lambda: table.selected_host() == host.name, host.name)  # type: ignore[attr-defined]

            await pilot.press("b")
            await pilot_wait(
                pilot, lambda: isinstance(app.screen, ConfirmBenchScreen), "the dialog"
            )
            dialog = app.screen
            assert isinstance(dialog, ConfirmBenchScreen)
            assert dialog.plan.preset == "quick" and " via " in dialog.plan.host_label
            assert "4 requests" in dialog.plan.workload
            await pilot.press("escape")  # cancelled: nothing runs
            await pilot.pause(0.5)
            assert not history_path().exists()

            probe = collector.probe(host.name)
            assert isinstance(probe, DeckProbe)
            forwarded = await probe.deck.reachable_base_url()  # the host's own forward
            assert forwarded != host.base_url
            await pilot.press("b")
            await pilot_wait(
                pilot, lambda: isinstance(app.screen, ConfirmBenchScreen), "the dialog"
            )
            await pilot.pause(0.2)
            app.screen.query_one("#confirm-yes", Button).press()
            await pilot_wait(
                pilot, lambda: "benchmark quick:" in app.last_action, "the benchmark's report"
            )
            assert "4 requests ok, 0 failed" in app.last_action, app.last_action
    finally:
        await collector.close()
    events = [(r["event"], r["host"]) for r in read_audit()]
    assert events == [
        ("fleet.bench.request", probe.deck.host_label),
        ("fleet.bench.done", probe.deck.host_label),
    ]
    runs = [json.loads(line) for line in history_path().read_text().splitlines()]
    assert len(runs) == 1 and runs[0]["context"]["base_url"] == forwarded


async def test_read_only_or_unconfirmed_bench_is_refused_and_audited(
    serving_pair: SshdFleet, tmp_path: Path
) -> None:
    from tui.core.errors import ServedeckError
    from tui.fleet.actions import ReadOnlyRefused

    host = serving_pair.hosts[0]
    collector = fleet_collector(serving_pair, tmp_path, read_only=True)
    try:
        probe = collector.probe(host.name)
        assert isinstance(probe, DeckProbe)
        with pytest.raises(ReadOnlyRefused, match="read-only"):
            await plan_bench(host.name, probe.deck)
    finally:
        await collector.close()
    writable = fleet_collector(serving_pair, tmp_path)
    try:
        probe = writable.probe(host.name)
        assert isinstance(probe, DeckProbe)
        plan = await plan_bench(host.name, probe.deck)
        with pytest.raises(ServedeckError, match="not confirmed"):
            await run_bench_on_host(plan, probe.deck, confirmed=False)
    finally:
        await writable.close()
    refusals = [(r["event"], r["reason"]) for r in read_audit()]
    assert refusals == [("fleet.refused", "read-only"), ("fleet.refused", "not confirmed")]
    assert not history_path().exists()
