"""GPU health counters and badges on a real NVIDIA box (written for 2x H200), through servedeck.

    PYTHONPATH=. python tests/perf/h200_health.py      (needs nvidia-ml-py and an NVIDIA driver)

1. reads every GPU's health counters through servedeck's NVML reader
   (tui.health.nvml_counters): NVLink error counters (replay, recovery, CRC flit/data,
   summed over the active links), remapped rows (correctable, uncorrectable, pending,
   failure), retired pages, ECC volatile/aggregate, clock event (throttle) reasons,
   power/thermal violation time, PCIe replays; each call the driver refuses is n/a and
   named under `unavailable`; times the read;
2. reads this boot's XIDs from the kernel journal (dmesg when the journal is closed to
   this user) through tui.health.health_run, folds counters and XIDs into the badges
   (tui.health.badge);
3. samples the GPUs through servedeck's NVML source and renders the GPU table with the
   badges at 160x50 (Textual run_test + save_screenshot) to
   screenshots/health-badge-h200.svg; a second SVG, health-badge-h200-synthetic-xid.svg,
   shows the same table with one synthetic XID 79 line decoded onto GPU 0 (the decoder
   and badge are real, the line is not: a healthy box draws no mark);
4. prints a JSON of the figures and writes it to $OUT/health-h200.json (and both SVGs to
   $OUT) when OUT is set.
Without nvidia-ml-py or a driver it stops at once with a one-line message (exit 2).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def fail(message: str) -> None:
    print(f"h200_health: {message}", file=sys.stderr)
    raise SystemExit(2)


try:
    import pynvml  # noqa: F401
except ImportError:
    fail("nvidia-ml-py is not installed (pip install nvidia-ml-py); it provides NVML's pynvml")

from tui.core.errors import ServedeckError  # noqa: E402
from tui.health.badge import GpuBadge, badges  # noqa: E402
from tui.health.counters import HealthCounters  # noqa: E402
from tui.health.health_run import read_events  # noqa: E402
from tui.health.nvml_counters import read_nvml_counters  # noqa: E402
from tui.health.report import build_report, with_events  # noqa: E402
from tui.health.xid.decode import decode_xid  # noqa: E402
from tui.hosts.local import LocalHost  # noqa: E402

SCREENSHOTS = ROOT / "screenshots"
SVG = "health-badge-h200.svg"
SVG_SYNTHETIC = "health-badge-h200-synthetic-xid.svg"


def na(value: Any) -> Any:
    """The JSON's figures: n/a where the driver did not report one."""
    if value is None:
        return "n/a"
    if isinstance(value, dict):
        return {k: na(v) for k, v in value.items()}
    if isinstance(value, list):
        return [na(v) for v in value]
    return value


async def render(snapshot: Any, marks: dict[int, GpuBadge], folder: Path, name: str) -> Path:
    from textual.app import App, ComposeResult

    from widgets.gpu_pane import GpuPane

    class BadgeApp(App[None]):
        def compose(self) -> ComposeResult:
            yield GpuPane(id="gpus")

        def on_mount(self) -> None:
            pane = self.query_one(GpuPane)
            pane.update_view(snapshot, {})
            pane.set_health(marks)
            pane.query_one("#gpu-table").focus()

    folder.mkdir(parents=True, exist_ok=True)
    app = BadgeApp()
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        await pilot.pause(0.2)
        app.save_screenshot(filename=name, path=str(folder))
    return folder / name


async def gpu_snapshot() -> Any:
    from tui.gpu.nvml import NvmlGpuSource

    source = await NvmlGpuSource.open()
    try:
        await source.sample()
        await asyncio.sleep(1.0)  # the slow metrics (PCIe throughput) arrive after a tick
        return await source.sample()
    finally:
        await source.aclose()


async def main() -> int:
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    started = time.perf_counter()
    try:
        counters: list[HealthCounters] = read_nvml_counters()
    except ServedeckError as error:
        fail(f"{error}; run this on a machine with NVIDIA GPUs and their driver")
    read_s = time.perf_counter() - started
    if not counters:
        fail("NVML started but reports no GPU")
    again = time.perf_counter()
    read_nvml_counters()
    reread_s = time.perf_counter() - again

    buses = {c.bus_id: c.index for c in counters}
    host = LocalHost()
    events, event_source, note = await read_events(host, buses)
    report = build_report(counters, events, event_source, [note] if note else [])
    marks = badges(report)
    snapshot = await gpu_snapshot()
    names = {s.index: s.name for s in snapshot.statics}

    screenshots = SCREENSHOTS
    written = [await render(snapshot, marks, screenshots, SVG)]
    bus0 = counters[0].bus_id  # 0000:18:00.0 -> the kernel's PCI:0000:18:00
    line = f"NVRM: Xid (PCI:{bus0[:-2]}): 79, pid=1, name=synthetic, GPU has fallen off the bus."
    synthetic = decode_xid(line, buses, time.time())
    assert synthetic is not None and synthetic.gpu_index == counters[0].index
    with_xid = badges(with_events(report, [synthetic]))
    written.append(await render(snapshot, with_xid, screenshots, SVG_SYNTHETIC))

    figures: dict[str, Any] = {
        "driver_version": snapshot.driver_version,
        "gpu_count": len(counters),
        "nvml_health_read_ms": round(read_s * 1000, 1),
        "nvml_health_reread_ms": round(reread_s * 1000, 1),
        "xid_source": event_source,
        "xid_events_this_boot": len(events),
        "notes": list(report.notes),
        "gpus": [
            {
                "index": c.index,
                "name": names.get(c.index),
                "bus_id": c.bus_id,
                "badge": marks[c.index].severity,
                "codes": marks[c.index].codes,
                "reasons": list(marks[c.index].reasons),
                "counters": na(c.as_dict()),
                "unavailable": list(c.unavailable),
            }
            for c in counters
        ],
        "synthetic_xid_badge": {
            "gpu": synthetic.gpu_index,
            "codes": with_xid[synthetic.gpu_index].codes,
            "severity": with_xid[synthetic.gpu_index].severity,
        },
        "svg": [
            str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
            for path in written
        ],
    }
    text = json.dumps(figures, indent=2)
    print(text)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "health-h200.json").write_text(text + "\n")
        for path in written:
            (out / path.name).write_bytes(path.read_bytes())
        print(f"h200_health: wrote {out / 'health-h200.json'} and the SVGs", file=sys.stderr)
    await host.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
