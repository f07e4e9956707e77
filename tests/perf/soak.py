"""A night of the demo console on a fast clock: does anything grow without end?

    python tests/perf/soak.py [--hours 8] [--load-seconds 3] [--idle-seconds 4]
                              [--types | --trace] [--out tests/perf/results/soak.txt]

The real console (ServedeckApp, headless, driven by Textual's Pilot) over a real
simulator (processes, HTTP, orphans). One simulated hour is four quarters; each
quarter starts the service (S), waits for ready, idles, runs a benchmark (b), looks
at Bench (4), stops the service (X), which leaves two orphaned workers, cleans them
up from Processes (3, K) and idles stopped. Alert rules that fire and resolve within
each quarter (requests running, leftovers while stopped, memory held) keep the alert
engine, the notifications and the recorder busy; the flight recorder is on. After each
simulated hour one line: the console process's RSS, open fds, threads, its live
descendant processes and the box's (both 0 at the mark: the service is stopped and
cleaned up), gc objects, the recording SQLite, the bench history, the audit log, the
notifications on screen and the real minutes so far. `--types` also prints the gc
object types (and widget classes) that grew since the previous hour; `--trace` adds
tracemalloc's allocations by traceback (several times slower: not for the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

QUARTERS_PER_HOUR = 4


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def descendants(root: int) -> list[int]:
    """Live processes under root (by parent pid), zombies left out."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        if fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    out: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def size_bytes(folder: Path, pattern: str) -> int:
    return sum(path.stat().st_size for path in folder.rglob(pattern) if path.is_file())


def soak_profile() -> Any:
    """The demo profile with rules that fire and resolve inside one quarter."""
    from tui.core.alert_rules import AlertRule
    from tui.core.config import demo_profile

    base = demo_profile()
    rules = (
        AlertRule("soak-busy", "engine.running_reqs", ">", 0, 0, "info", 0, "requests running"),
        AlertRule("leftovers", "procs.leftovers_while_inactive", ">=", 1, 0, "warning", 0, ""),
        AlertRule("soak-memory", "gpu.memory_used_pct", ">=", 50, 0, "info", 0, "memory held"),
    )
    return replace(base, alerting=replace(base.alerting, rules=rules))


class Night:
    """Drives the console and prints a line per simulated hour."""

    def __init__(self, args: argparse.Namespace, data: Path) -> None:
        self.args = args
        self.data = data
        self.rows: list[str] = []
        self.previous: tracemalloc.Snapshot | None = None
        self.previous_types: Counter[str] = Counter()

    async def until(self, pilot: Any, predicate: Any, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
            await pilot.pause(0.1)

    async def confirm(self, pilot: Any, app: Any, screen_type: type, button: str) -> None:
        await self.until(pilot, lambda: isinstance(app.screen, screen_type), 20, "the dialog")
        await self.until(
            pilot,
            lambda: app.screen.focused is not None and app.screen.focused.id == button,
            10,
            "the focus on Cancel",
        )
        await pilot.press("shift+tab")
        await pilot.press("enter")

    async def quarter(self, pilot: Any, app: Any) -> None:
        from tui.screens.confirm_action import ConfirmActionScreen
        from tui.screens.kill_confirm import KillConfirmScreen

        box = app.deck.box

        def state() -> str | None:
            return None if app.unit_state is None else app.unit_state.active_state

        await pilot.press("1")
        await pilot.press("S")
        await self.confirm(pilot, app, ConfirmActionScreen, "confirm-no")
        await self.until(pilot, lambda: app.ready, 120, "ready")
        await pilot.pause(self.args.idle_seconds)  # serving, idle: every poll runs
        await pilot.press("b")
        await self.until(pilot, lambda: app.bench.process is not None, 30, "bench start")
        await self.until(pilot, lambda: app.bench.process is None, 180, "bench end")
        await pilot.press("4")
        await pilot.pause(0.5)
        await pilot.press("1")
        await pilot.press("X")
        await self.confirm(pilot, app, ConfirmActionScreen, "confirm-no")
        await self.until(pilot, lambda: state() == "inactive", 60, "the unit to stop")
        await self.until(pilot, lambda: len(box.live_processes()) >= 1, 30, "orphans")
        await pilot.press("3")

        def leftovers() -> bool:
            listing = app.procs.listing
            return listing is not None and any(p.klass == "leftover" for p in listing.processes)

        await self.until(pilot, leftovers, 60, "the leftovers listed")
        await pilot.press("K")
        await self.confirm(pilot, app, KillConfirmScreen, "kill-cancel")
        await self.until(pilot, lambda: not box.live_processes(), 60, "the orphans to end")
        await pilot.press("1")
        await pilot.pause(self.args.idle_seconds)  # stopped, idle

    def measure(self, hour: int, app: Any, started_s: float) -> None:
        from tui.core import paths

        gc.collect()
        data = paths.data_dir()
        audit = paths.audit_log_path()
        row = (
            f"{hour:>4} {rss_mb():8.1f} {len(os.listdir('/proc/self/fd')):4d} "
            f"{threading.active_count():4d} {len(descendants(os.getpid())):5d} "
            f"{len(app.deck.box.live_processes()):4d} "
            f"{len(gc.get_objects()):8d} {size_bytes(data, '*.sqlite*') / 1e6:8.2f} "
            f"{size_bytes(data, 'bench*') / 1e3:8.1f} "
            f"{(audit.stat().st_size if audit.exists() else 0) / 1e3:8.1f} "
            f"{len(app._notifications):5d} {(time.monotonic() - started_s) / 60:7.1f}"
        )
        self.rows.append(row)
        print(row, flush=True)
        if self.args.trace or self.args.types:
            self.trace(hour)

    def trace(self, hour: int) -> None:
        """What grew since the last hour: gc objects by type, widgets by class (alive
        or in the DOM) and, with tracemalloc on, the allocations by traceback."""
        from textual.widget import Widget

        objects = gc.get_objects()
        types = Counter(type(obj).__name__ for obj in objects)
        types.update(f"widget:{type(obj).__name__}" for obj in objects if isinstance(obj, Widget))
        snapshot = None
        if tracemalloc.is_tracing():
            snapshot = tracemalloc.take_snapshot().filter_traces(
                (tracemalloc.Filter(False, tracemalloc.__file__),)
            )
        if self.previous_types:
            grown = (types - self.previous_types).most_common(20)
            print(f"--- hour {hour}, grown: " + ", ".join(f"{n} +{c}" for n, c in grown))
        if snapshot is not None and self.previous is not None:
            for stat in snapshot.compare_to(self.previous, "traceback")[:10]:
                print(f"{stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks")
                for line in stat.traceback.format(limit=8):
                    print("    " + line)
        sys.stdout.flush()
        self.previous = snapshot
        self.previous_types = types

    async def run(self) -> int:
        from tui.app import ServedeckApp
        from tui.compose import open_deck
        from tui.core import paths

        profile = soak_profile()
        deck = open_deck(profile, demo_load_s=self.args.load_seconds, demo_orphans_on_stop=2)
        app = ServedeckApp(deck.profile, deck)
        header = (
            "hour   rss_MB  fds thr children sim gc_objs  rec_MB bench_kB audit_kB notes  real_min"
        )
        print(header, flush=True)
        self.rows.append(header)
        started_s = time.monotonic()
        with paths.demo_records(True):
            async with app.run_test(size=(160, 50)) as pilot:
                await self.until(pilot, lambda: app.unit_state is not None, 60, "the unit")
                await self.until(pilot, lambda: app.last_gpu is not None, 60, "a GPU sample")
                self.measure(0, app, started_s)
                for hour in range(1, self.args.hours + 1):
                    for _ in range(QUARTERS_PER_HOUR):
                        await self.quarter(pilot, app)
                    self.measure(hour, app, started_s)
                await pilot.press("q")
        return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hours", type=int, default=8)
    parser.add_argument("--load-seconds", type=float, default=3.0)
    parser.add_argument("--idle-seconds", type=float, default=4.0)
    parser.add_argument("--types", action="store_true", help="print what grew: gc objects by type")
    parser.add_argument("--trace", action="store_true", help="--types and tracemalloc (slow)")
    parser.add_argument("--out", type=Path, help="write the table here too")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="servedeck-soak-"))
    for name, sub in (("DATA", "data"), ("LOG", "log"), ("CONFIG", "cfg")):
        os.environ[f"SERVEDECK_{name}_DIR"] = str(data / sub)
    if args.trace:
        tracemalloc.start(12)
    night = Night(args, data)
    code = asyncio.run(night.run())
    if args.out is not None:
        args.out.write_text("\n".join(night.rows) + "\n")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
