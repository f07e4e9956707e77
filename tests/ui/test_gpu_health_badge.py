"""The GPU table's health mark: computed in tui.health.badge, drawn by GpuPane.

Reports are built by the real parsers from a real `nvidia-smi -q` capture (2x H200)
and kernel-format XID lines; the widget is only handed the badges.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from textual.widgets import Static

from tests.support.gpu_boxes import loading_history
from tests.support.gpu_pane_app import GpuPaneApp
from tui.health.badge import XID_RECENT_S, GpuBadge, badges
from tui.health.counters import HealthCounters, parse_counters
from tui.health.interconnect.parse import norm_bdf
from tui.health.report import build_report, with_events
from tui.health.xid.decode import decode_xid
from widgets.gpu_rows import badge_cell
from widgets.gpu_table import GpuTable

FIXTURE_Q = (
    Path(__file__).parents[1] / "support" / "fixtures" / "health" / "nvidia_smi_q_2x_h200.txt"
)


def _box_report(now_s: float) -> tuple[dict[int, GpuBadge], dict[str, int]]:
    """The 8-GPU test box: XID 79 on GPU2, a pending remap on GPU5, NVLink errors on GPU6,
    a thermal slowdown on GPU7, an old XID 13 on GPU0; GPUs 1, 3, 4 healthy."""
    snapshot, _ = loading_history()
    buses = {norm_bdf(s.bus_id): s.index for s in snapshot.statics}
    counters = [HealthCounters(i, bus) for bus, i in sorted(buses.items(), key=lambda b: b[1])]
    counters[5] = replace(counters[5], remapped_rows_pending=True)
    counters[6] = replace(counters[6], nvlink_crc_flit_errors=12, nvlink_replay_errors=3)
    counters[7] = replace(counters[7], clock_event_reasons=("HW Thermal Slowdown",))
    bus2 = next(b for b, i in buses.items() if i == 2)[5:12]  # 0000:41:00 from 0000:41:00.0
    bus0 = next(b for b, i in buses.items() if i == 0)[5:12]
    fresh = decode_xid(
        f"NVRM: Xid (PCI:0000:{bus2}): 79, pid=4181, name=python3, GPU has fallen off the bus.",
        buses,
        now_s - 5,
    )
    old = decode_xid(
        f"NVRM: Xid (PCI:0000:{bus0}): 13, pid=1, name=python3, Graphics SM Warp Exception",
        buses,
        now_s - XID_RECENT_S - 60,
    )
    assert fresh is not None and old is not None
    return badges(build_report(counters, [fresh, old], "journal"), now_s), buses


def test_badges_from_counters_and_xids() -> None:
    marks, _ = _box_report(time.time())
    assert {i: (b.codes, b.severity) for i, b in marks.items()} == {
        0: ("", "ok"),  # its XID is older than a day
        1: ("", "ok"),
        2: ("X", "crit"),
        3: ("", "ok"),
        4: ("", "ok"),
        5: ("R", "warn"),
        6: ("L", "warn"),
        7: ("T", "warn"),
    }
    assert any("NVLink" in r and "15" in r for r in marks[6].reasons)
    assert any("reboot the node" in r for r in marks[2].reasons)


def test_badges_from_the_h200_q_fixture() -> None:
    """`nvidia-smi -q` of 2x H200 (tests/support/fixtures/health/README.md): GPU0 clean; GPU1 with
    a pending remap, an uncorrectable volatile ECC error and SW thermal slowdown."""
    counters = parse_counters(FIXTURE_Q.read_text())
    assert len(counters) == 2
    marks = badges(build_report(counters, [], "journal"))
    assert [(b.codes, b.severity) for b in marks.values()] == [("", "ok"), ("RET", "warn")]
    assert badges(None) == {}


def test_with_events_adds_once_and_recomputes() -> None:
    counters = parse_counters(FIXTURE_Q.read_text())
    report = build_report(counters, [], "journal")
    bus = counters[1].bus_id  # 00000000:..:00.0 as norm_bdf writes it
    line = f"NVRM: Xid (PCI:{bus[:-2]}): 48, pid=7, name=python3, double bit error"
    event = decode_xid(line, {c.bus_id: c.index for c in counters}, time.time(), "cursor-1")
    assert event is not None and event.gpu_index == 1
    once = with_events(report, [event])
    twice = with_events(once, [event])
    assert twice is once and len(once.gpus[1].events) == 1
    assert badges(once)[1].codes == "XRET" and badges(once)[1].severity == "crit"


def test_badge_cell_and_no_mark_when_healthy() -> None:
    assert badge_cell(3, None) == "3"
    assert badge_cell(3, GpuBadge(3, "ok", "")) == "3"
    assert badge_cell(3, GpuBadge(3, "crit", "XR")) == "3[bold white on red]X[/]"


async def test_pane_draws_marks_and_the_selected_gpus_reasons() -> None:
    snapshot, trends = loading_history()
    marks, _ = _box_report(time.time())
    app = GpuPaneApp(snapshot, trends, badges=marks)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        table = app.query_one(GpuTable)
        assert table.cell("gpu-2", "gpu").endswith("X[/]")
        assert table.cell("gpu-1", "gpu") == "1"
        detail = app.query_one("#gpu-detail", Static)
        await pilot.press("down", "down")  # GPU 0 -> GPU 2
        await pilot.pause()
        text = str(detail.render())
        assert "health X" in text and "fallen off the bus" in text
        # Healthy again: the mark goes, only that row is repainted.
        from widgets.gpu_pane import GpuPane

        pane = app.query_one(GpuPane)
        pane.set_health({**marks, 2: GpuBadge(2, "ok", "")})
        await pilot.pause()
        assert table.cell("gpu-2", "gpu") == "2"
        assert table.rows_repainted == 1


def test_snapshot_health_badges(snap_compare) -> None:  # type: ignore[no-untyped-def]
    snapshot, trends = loading_history()
    marks, _ = _box_report(1_790_000_000.0)
    # Fixed times: the snapshot must not depend on today's date.
    assert snap_compare(GpuPaneApp(snapshot, trends, badges=marks), terminal_size=(160, 50))
