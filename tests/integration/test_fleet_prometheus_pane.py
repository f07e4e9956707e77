"""The Fleet pane on a real Prometheus: its rows beside SSH-style rows, stale and lost states, history.

/usr/bin/prometheus scrapes two dcgm-exporter-compatible boxes every second (one whose
GPUs' utilization climbs in a sawtooth, one idle); the pane (headless, Textual's Pilot)
must show them as `prom` rows next to the demo fleet's rows, draw the selected host's
`query_range` history as sparklines that agree with the exporter's truth, show a box
whose exporter died as stale with its scrape age (n/a, never 0), and keep every host
through a Prometheus stop (unreachable, the error on the status line) until it recovers.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.integration.test_fleet_prometheus_faults import fleet_cli
from tests.support.prometheus_fixtures import (
    PrometheusServer,
    ScrapeJob,
    prometheus_factory,  # noqa: F401 - a fixture
    wait_for,
)
from tests.support.screen_text import screen_lines, screen_text
from tui.app.fleet_app import FleetApp
from tui.fleet.collector import FleetCollector
from tui.fleet.demo import DemoFleet
from tui.fleet.feed import FleetFeed
from tui.fleet.history import HostHistory
from tui.fleet.prom_history import PrometheusHistory
from tui.fleet.prom_query import PromFleetConfig
from tui.fleet.prometheus import PrometheusFleet
from tui.gpu.model import GpuBoxSnapshot
from tui.sim.dcgm import DcgmCollector, DcgmServer
from tui.sim.gpu_model import SimGpuModel
from widgets.fleet_history import FleetHistoryView, history_lines
from widgets.fleet_table import FleetTable

BUSY, IDLE = "127.0.0.2", "127.0.0.3"
SAWTOOTH = {float(level * 10) for level in range(10)}


def sawtooth(model: SimGpuModel) -> Callable[[], GpuBoxSnapshot]:
    """The model's GPUs with utilization 0, 10, ... 90 % by the second (the exporter's truth)."""

    def snapshot() -> GpuBoxSnapshot:
        snap = model.snapshot()
        util = float(int(time.time()) % 10 * 10)
        return replace(
            snap, samples=tuple(replace(s, utilization_gpu_pct=util) for s in snap.samples)
        )

    return snapshot


class NodeExporter:
    """A second exporter on the idle box (a node-exporter's place): one gauge, scraped as `node`."""

    def __init__(self, address: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = b"# TYPE node_boot_time_seconds gauge\nnode_boot_time_seconds 1.7e9\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return

        self.httpd = ThreadingHTTPServer((address, 0), Handler)
        self.target = f"{address}:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self._thread.is_alive():
            self.httpd.shutdown()
            self.httpd.server_close()
            self._thread.join(10)


@pytest.fixture
def node_exporter() -> Iterator[NodeExporter]:
    exporter = NodeExporter(IDLE)
    yield exporter
    exporter.close()


@pytest.fixture
def dcgm_boxes(tmp_path: Path) -> Iterator[dict[str, DcgmServer]]:
    busy = SimGpuModel(tmp_path / "busy", seed=21)
    idle = SimGpuModel(tmp_path / "idle", seed=22)
    servers = {
        BUSY: DcgmServer(DcgmCollector(sawtooth(busy), "busy"), 0, BUSY).start(),
        IDLE: DcgmServer(DcgmCollector(idle.snapshot, "idle"), 0, IDLE).start(),
    }
    yield servers
    for server in servers.values():
        try:
            server.close()
        except Exception:  # closed by the test already
            pass


def jobs(servers: dict[str, DcgmServer], node: NodeExporter | None = None) -> list[ScrapeJob]:
    found = [ScrapeJob("dcgm", [(f"{address}:{s.port}", {}) for address, s in servers.items()])]
    return found + ([ScrapeJob("node", [(node.target, {})])] if node is not None else [])


async def until(
    pilot: Pilot[object], check: Callable[[], object], timeout_s: float, what: str
) -> object:
    """Let the app run until `check()` is truthy (the machine is shared: be generous)."""
    deadline = time.monotonic() + timeout_s
    last: object = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        await pilot.pause(0.2)
    raise AssertionError(
        f"timed out after {timeout_s} s waiting for {what}\n{screen_text(pilot.app)}"
    )


def cell(app: FleetApp, host: str, column: str) -> str | None:
    table = app.query_one(FleetTable)
    try:
        return table.get_cell(str(table.row_of(host)), column).plain
    except Exception:  # no such row (yet)
        return None


def shown_row(table: FleetTable, host: str) -> int:
    """The row a host is drawn on (rows are keyed by place, not by host)."""
    row = table.row_of(host)
    assert row is not None, f"{host} is not shown"
    return row


async def in_thread(call: Callable[[], object]) -> None:
    """A blocking fixture call (start/stop a process) off the app's event loop."""
    await asyncio.to_thread(call)


async def test_prometheus_rows_history_stale_and_prometheus_lost_then_back(
    dcgm_boxes: dict[str, DcgmServer],
    node_exporter: NodeExporter,
    prometheus_factory: Callable[..., PrometheusServer],  # noqa: F811
) -> None:
    prom = prometheus_factory(jobs(dcgm_boxes, node_exporter))
    demo = DemoFleet(2)
    source = PrometheusFleet(PromFleetConfig(prom.url))
    history = PrometheusHistory(source, window_s=60, step_s=1)
    feed = FleetFeed(
        collector=FleetCollector(demo.probes, host_timeout_s=10),
        prometheus=source,
        history=history,
    )
    app = FleetApp(feed, interval_s=0.5, history=history, history_every_s=1.0)
    try:
        async with app.run_test(size=(200, 50)) as pilot:
            # Both scraped boxes as `prom` rows with their 8 GPUs, beside the demo's rows.
            def both_up() -> bool:
                return cell(app, BUSY, "gpus") == "8" and cell(app, IDLE, "gpus") == "8"

            await until(pilot, both_up, 60, "both Prometheus boxes in the table")
            assert cell(app, BUSY, "src") == "prom" and cell(app, "box-01", "src") == "demo"
            assert {row.host for row in app.rows} == {BUSY, IDLE, "box-01", "box-02"}
            age = cell(app, IDLE, "age")
            assert age is not None and age.endswith("s") and int(age[:-1]) < 15
            assert cell(app, IDLE, "util") == "0%"  # idle GPUs: a true 0
            assert cell(app, IDLE, "reqs") == "n/a"  # no vLLM scraped there: unknown
            assert cell(app, IDLE, "state") == "unknown"  # no servedeck exporter either

            # The busy box's history: a sawtooth, as its exporter wrote it, step by step.
            table = app.query_one(FleetTable)
            table.move_cursor(row=shown_row(table, BUSY))

            def sawtooth_seen() -> HostHistory | None:
                got = app.history
                if got is None or got.host != BUSY or got.error:
                    return None
                util = got.series[0].known
                return got if len(util) >= 12 and len(set(util)) >= 4 else None

            got = await until(pilot, sawtooth_seen, 90, "12 s of the busy box's utilization")
            assert isinstance(got, HostHistory)
            util, tokens, running = got.series
            assert util.spec.column == "gpu_util_pct_max"
            assert set(util.known) <= SAWTOOTH  # every point one the exporter served
            assert len(util.values) == 61  # the 60 s window at 1 s steps, gaps as None
            assert tokens.known == [] and running.known == []  # no vLLM there: no samples
            shown = str(app.query_one(FleetHistoryView).render())
            assert f"{BUSY} last 1m00s" in shown
            assert "GPU util max" in shown and "peak 90%" in shown
            assert any(level in shown for level in "▃▄▅▆▇█")
            assert "gen tok/s" in shown and "no samples" in shown

            # Enter on a Prometheus-only host: no profile, so nothing to open; the pane stays.
            await pilot.press("enter")
            await pilot.pause(0.2)
            assert app.is_running
            assert "no profile for this host, so no console to open" in screen_text(app)

            # The idle box's dcgm-exporter dies (its node exporter still answers): stale,
            # with the scrape age, n/a not zeros.
            dcgm_boxes[IDLE].close()

            def stale() -> bool:
                return cell(app, IDLE, "state") == "stale" and cell(app, IDLE, "gpus") == "n/a"

            await until(pilot, stale, 60, "the idle box shown stale")
            assert cell(app, IDLE, "util") == "n/a" and cell(app, IDLE, "mem") != "0"
            row = next(row for row in app.rows if row.host == IDLE)
            assert row.error and "scrape of dcgm failing" in row.error
            assert "1 stale" in screen_text(app)

            # Its last exporter dies too: Prometheus reaches nothing there, so unreachable,
            # with the age of its last good scrape.
            node_exporter.close()
            await until(pilot, lambda: cell(app, IDLE, "state") == "unreachable", 60, "down")
            assert cell(app, IDLE, "gpus") == "n/a" and cell(app, IDLE, "age") != "n/a"

            # Prometheus stops: every host stays, unreachable, and the status line says why.
            await in_thread(prom.stop)

            def lost() -> bool:
                prom_rows = [cell(app, host, "state") for host in (BUSY, IDLE)]
                return prom_rows == ["unreachable", "unreachable"]

            await until(pilot, lost, 30, "the Prometheus rows unreachable")
            assert cell(app, BUSY, "gpus") == "n/a"  # not the last figures, not zeros
            assert cell(app, "box-01", "src") == "demo"  # the other source goes on
            text = screen_text(app)
            assert f"prometheus {prom.url}" in text and "ConnectError" in text

            def history_lost() -> bool:
                got = app.history
                return got is not None and got.error is not None

            await until(pilot, history_lost, 30, "the history's error")
            assert "history: prometheus" in str(app.query_one(FleetHistoryView).render())

            # Prometheus is back (same TSDB): the rows recover.
            await in_thread(prom.start)

            def back() -> bool:
                return cell(app, BUSY, "gpus") == "8" and cell(app, BUSY, "state") == "unknown"

            await until(pilot, back, 60, "the busy box back after the restart")
            assert f"prometheus {prom.url}" not in screen_text(app)
            await until(pilot, sawtooth_seen, 60, "the history back after the restart")
    finally:
        await feed.close()
        demo.close()


async def test_prometheus_down_from_the_start_is_a_state_then_rows_arrive(
    dcgm_boxes: dict[str, DcgmServer],
    prometheus_factory: Callable[..., PrometheusServer],  # noqa: F811
) -> None:
    prom = prometheus_factory(jobs(dcgm_boxes))
    await in_thread(prom.stop)
    source = PrometheusFleet(PromFleetConfig(prom.url))
    feed = FleetFeed(prometheus=source, history=PrometheusHistory(source))
    app = FleetApp(feed, interval_s=0.5, history=feed.history)
    try:
        async with app.run_test(size=(80, 24)) as pilot:

            def problem_shown() -> bool:
                return app.refreshes >= 2 and "ConnectError" in screen_text(app)

            await until(pilot, problem_shown, 30, "the connect error on the status line")
            assert app.query_one(FleetTable).row_count == 0 and app.is_running
            await in_thread(prom.start)
            await until(pilot, lambda: cell(app, BUSY, "src") == "prom", 60, "rows")
            assert "ConnectError" not in screen_text(app)
            await until(pilot, lambda: app.history is not None, 30, "the first history")

            def history_drawn() -> bool:  # the panel draws a refresh after the fetch, under load
                text = screen_text(app)
                return "GPU util max" in text or "no samples" in text

            await until(pilot, history_drawn, 30, "the history panel")
            assert all(len(line.rstrip()) <= 80 for line in screen_lines(app))
    finally:
        await feed.close()


class Broken(PrometheusHistory):
    """A history whose fetch has a bug (not a Prometheus fault): the pane must hold."""

    async def fetch(self, host: str) -> HostHistory:
        raise RuntimeError("planted history bug")


async def test_a_host_in_both_sources_is_one_prometheus_row_and_enter_opens_its_console(
    dcgm_boxes: dict[str, DcgmServer],
    prometheus_factory: Callable[..., PrometheusServer],  # noqa: F811
) -> None:
    """The busy box is scraped with host="box-01", the name of a group member: one row
    (Prometheus's), and Enter leaves for that member's console (its profile's Deck)."""
    target = f"{BUSY}:{dcgm_boxes[BUSY].port}"
    prom = prometheus_factory([ScrapeJob("dcgm", [(target, {"host": "box-01"})])])
    demo = DemoFleet(2)
    source = PrometheusFleet(PromFleetConfig(prom.url, host_label="host"))
    feed = FleetFeed(
        collector=FleetCollector(demo.probes, host_timeout_s=10),
        prometheus=source,
        history=Broken(source),
    )
    app = FleetApp(feed, interval_s=0.5, history=feed.history)
    try:
        async with app.run_test(size=(200, 50)) as pilot:
            await until(pilot, lambda: cell(app, "box-01", "src") == "prom", 60, "box-01")
            await until(pilot, lambda: cell(app, "box-02", "src") == "demo", 30, "box-02")
            assert sorted(row.host for row in app.rows) == ["box-01", "box-02"]
            assert cell(app, "box-01", "gpus") == "8"  # the dcgm-exporter's, not the demo's
            table = app.query_one(FleetTable)
            # A demo (SSH-style) row has no Prometheus history; a bug in the history's
            # fetch is a line in its place, and the rows go on refreshing.
            table.move_cursor(row=shown_row(table, "box-02"))
            await until(
                pilot, lambda: "history only for Prometheus rows" in screen_text(app), 20, "note"
            )
            table.move_cursor(row=shown_row(table, "box-01"))
            await until(pilot, lambda: "history failed: planted" in screen_text(app), 20, "bug")
            refreshes = app.refreshes
            await until(pilot, lambda: app.refreshes > refreshes + 1, 20, "refreshes go on")
            table.move_cursor(row=shown_row(table, "box-01"))
            await pilot.press("enter")
            await pilot.pause(0.2)
        assert app.return_value == "box-01"
    finally:
        await feed.close()


async def test_history_of_a_host_not_scraped_is_empty_not_zero(
    dcgm_boxes: dict[str, DcgmServer],
    prometheus_factory: Callable[..., PrometheusServer],  # noqa: F811
) -> None:
    prom = prometheus_factory(jobs(dcgm_boxes))
    source = PrometheusFleet(PromFleetConfig(prom.url))
    try:
        ghost = await PrometheusHistory(source, window_s=120, step_s=5).fetch("10.9.9.9")
        assert ghost.error is None and ghost.empty
        assert all(value is None for series in ghost.series for value in series.values)
        assert "no samples in the last 2m00s" in history_lines(ghost, 100)[0]
        await in_thread(prom.stop)
        down = await PrometheusHistory(source).fetch(BUSY)
        assert down.error is not None and "ConnectError" in down.error and not down.series
    finally:
        await source.aclose()


def test_a_group_file_naming_prometheus_reads_its_rows_there(
    tmp_path: Path,
    dcgm_boxes: dict[str, DcgmServer],
    prometheus_factory: Callable[..., PrometheusServer],  # noqa: F811
) -> None:
    """`servedeck fleet -g GROUP` where the group's [fleet] says source = "prometheus"."""
    prom = prometheus_factory(jobs(dcgm_boxes))
    group = tmp_path / "prod.toml"
    group.write_text(f'[fleet]\ndescription = "prod"\nsource = "prometheus"\nurl = "{prom.url}"\n')

    def rows() -> list[dict[str, object]] | None:
        done = fleet_cli("-g", str(group), "--json")
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        return found if [row["gpu_count"] for row in found] == [8, 8] else None

    found = wait_for(rows, 60, "both boxes through the group file")
    assert isinstance(found, list)
    assert [row["host"] for row in found] == [BUSY, IDLE]
    assert {row["source"] for row in found} == {"prometheus"}
    group.write_text('[fleet]\nsource = "prometheus"\nurl = "prom:9090"\n')
    done = fleet_cli("-g", str(group), "--json")
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert f"{group}: [fleet].url: expected an http(s):// URL" in done.stderr
    group.write_text(f'[fleet]\nhosts = []\nurl = "{prom.url}"\n')  # an SSH group: no url
    done = fleet_cli("-g", str(group), "--json")
    assert done.returncode == 2 and "fleet.url: unknown key" in done.stderr
