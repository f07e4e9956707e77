"""The pure parts of the Fleet pane's Prometheus rows: the history grid, gap sparklines,
the stale state, the Age and Src cells and the feed's merge of two sources (fast tier)."""

from __future__ import annotations

from tui.fleet.feed import FleetFeed
from tui.fleet.history import HistorySpec, HostHistory, SeriesHistory, grid
from tui.fleet.model import FleetRow
from tui.fleet.view import host_state, matches, summarize
from widgets.fleet_history import gap_sparkline, history_lines, series_line
from widgets.fleet_table import age_cell, cells

STALE = "stale: scrape of dcgm failing (last good scrape 42 s ago)"


def test_grid_and_gap_sparkline_keep_gaps() -> None:
    values = grid([(100.0, 5.0), (102.0, 50.0), (103.0, float("nan")), (99.0, 1.0)], 100.0, 1, 4)
    assert values == (5.0, None, 50.0, None)  # before the start and NaN are gaps
    line = gap_sparkline(values, 10, 50.0)
    assert line.count("·") == 2 and line.startswith("▂") and "█" in line
    squeezed = gap_sparkline([None] * 10 + [10.0] * 10, 4, 10.0)
    assert squeezed == "[dim]·[/][dim]·[/]██"
    flat = SeriesHistory(HistorySpec("running", "running"), (0.0, 0.0, None))
    assert flat.peak == 0.0 and flat.last is None  # the newest step has no sample: not "0 now"
    assert "now n/a  peak 0" in series_line(flat, 80)


def test_history_lines_say_error_empty_or_draw() -> None:
    spec = HistorySpec("gpu_util_pct_max", "GPU util max", "%", 100.0)
    none = SeriesHistory(spec, (None,) * 61)
    empty = HostHistory("h1", 900.0, 15.0, 0.0, (none,))
    assert history_lines(empty, 80) == [
        "[b]h1[/b]: [yellow]no samples in the last 15m00s[/] (not scraped then)"
    ]
    failed = HostHistory("h1", 900.0, 15.0, 0.0, error="prometheus http://p: ConnectError")
    assert "[red]prometheus http://p: ConnectError[/]" in history_lines(failed, 80)[0]
    ramp = SeriesHistory(spec, tuple(float(v) for v in range(0, 61)))
    drawn = history_lines(HostHistory("h[b]", 900.0, 15.0, 0.0, (ramp,)), 80)
    assert drawn[0].startswith("[b]h\\[b][/b] last 15m00s")  # a host name is not markup
    assert drawn[1].startswith("GPU util max ▁") and drawn[1].endswith("now 60%  peak 60%")
    assert history_lines(None, 80, "box-02: history only for Prometheus rows (not ssh)")


def test_stale_rows_are_their_own_state_with_their_age() -> None:
    stale = FleetRow("h1", True, "prometheus", error=STALE, sample_age_s=42.0, gpu_count=None)
    fresh = FleetRow("h2", True, "prometheus", sample_age_s=1.2, gpu_count=8)
    lost = FleetRow("h3", False, "prometheus", error="prometheus http://p: ConnectError")
    ssh = FleetRow("h4", True, "ssh", phase="serving")
    assert [host_state(r) for r in (stale, fresh, lost, ssh)] == [
        "stale",
        "unknown",
        "unreachable",
        "serving",
    ]
    assert age_cell(stale) == "[bold yellow]42s[/]" and age_cell(fresh) == "1s"
    assert age_cell(lost) == "n/a" and age_cell(ssh) == ""  # SSH rows are polled live
    assert summarize([stale, fresh, lost, ssh]).line() == (
        "3/4 up: 1 serving, 1 unknown, 1 stale, 1 unreachable | 8 GPUs | 0 tok/s"
    )
    wide = [text.plain for text in cells(stale, compact=False)]
    assert wide[:4] == ["h1", "prom", "stale", "42s"] and "0" not in wide[10]  # GPUs: n/a
    assert matches(stale, "prom stale") and not matches(ssh, "prom")


class _Rows:
    """An SSH collector's rows as the feed sees them (the collector's own tests poll hosts)."""

    def __init__(self, rows: list[FleetRow]) -> None:
        self.rows = rows

    async def refresh(self) -> list[FleetRow]:
        return self.rows


async def test_feed_prefers_the_prometheus_row_of_a_host_in_both() -> None:
    class Prom:
        last_error = None
        last_note = None

        async def refresh(self) -> list[FleetRow]:
            return [FleetRow("box-01", True, "prometheus", gpu_count=8)]

    feed = FleetFeed(collector=_Rows([FleetRow("box-01", True), FleetRow("box-02", True)]))  # type: ignore[arg-type]
    feed.prometheus = Prom()  # type: ignore[assignment]
    rows = await feed.refresh()
    assert [(r.host, r.source) for r in rows] == [("box-01", "prometheus"), ("box-02", "ssh")]
    assert feed.problems == ()
