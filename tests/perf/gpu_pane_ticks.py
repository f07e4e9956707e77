"""Event-loop time per GPU tick of the whole console, 8 simulated GPUs that all change.

    python tests/perf/gpu_pane_ticks.py [--seconds 30] [--interval 1] [--profile]

The console runs in a real terminal (tmux, 160x50) on the simulator in its churn
mode: every displayed field of every GPU (utilization, memory and its process,
temperature, power, clocks, PCIe traffic) changes on every tick, the worst case
for drawing. After a warm-up, the main thread's CPU time (time.thread_time: the
event loop, the compositor, the conversion to terminal codes) and the whole
process's CPU are read over the window and divided by the GPU ticks drawn in it.
`--profile` runs a second window under cProfile (main thread only) and prints the
per-function breakdown; profiling inflates the times, so the figures come from the
unprofiled window. `--static` turns churn off (an idle box) for comparison.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Where the main thread's time goes, by the code that spends it (cumulative, so nested).
BREAKDOWN = (
    ("GpuPane.update_view (rows, cells, detail)", "gpu_pane.py", "update_view"),
    ("  GpuPane._rows (cell markup)", "gpu_pane.py", "_rows"),
    ("  GpuTable.set_rows (diff, parse, Text)", "gpu_table.py", "set_rows"),
    ("  GpuPane._render_detail (process list)", "gpu_pane.py", "_render_detail"),
    ("    LineStatic._render_rows (changed line)", "line_static.py", "_render_rows"),
    ("GpuHistory.trends (sparkline series)", "history.py", "trends"),
    ("GpuTable.render_line (Strips)", "gpu_table.py", "render_line"),
    ("GpuTable.render_filtered_line (rows, filtered)", "gpu_table.py", "render_filtered_line"),
    ("Screen._refresh_layout (layout, compositor)", "screen.py", "_refresh_layout"),
    ("Compositor.render_update", "_compositor.py", "render_update"),
    ("Widget._render_content / render_lines", "widget.py", "render_lines"),
    ("PlainLines.render (table, process list lines)", "plain_lines.py", "render"),
    ("App._display (terminal codes)", "app.py", "_display"),
    ("Stylesheet.update_nodes (CSS)", "stylesheet.py", "update_nodes"),
    ("Static.update / visualize", "_static.py", "update"),
    ("LoadStrip.show", "load_strip.py", "show"),
    ("HeaderBar", "header_bar.py", "render"),
)


def child(args: argparse.Namespace) -> int:
    """Run the console on a churning simulated box and write the figures to args.result."""
    sys.path.insert(0, str(ROOT))
    from textual.screen import Screen

    from tui.app import ServedeckApp
    from tui.compose import open_deck
    from tui.core.config import Profile, demo_profile
    from tui.hosts.local import LocalHost
    from tui.sim.box import SimBox
    from tui.sim.deck import SimDeck

    box: SimBox | None = None
    if args.local:  # this machine's GPUs through NVML, as `servedeck -p local` shows them
        profile = Profile(name="local")
        profile = replace(profile, gpu=replace(profile.gpu, refresh_s=args.interval))
        deck = open_deck(profile)
        result: dict[str, object] = {"source": "local", "churn": False}
    else:
        box = SimBox(load_seconds=45.0, gpu_churn=not args.static)
        profile = demo_profile()
        profile = replace(
            profile,
            gpu=replace(profile.gpu, refresh_s=args.interval),
            service=replace(profile.service, base_url=box.base_url),
        )
        deck = SimDeck(profile, LocalHost(label="simulator"), box)
        result = {"source": "simulated", "gpus": box.gpus.gpu_count, "churn": not args.static}
    profiler = cProfile.Profile() if args.profile else None
    # The tick's own cost: handling the snapshot, then every screen update (compositor
    # and terminal codes) in the window; the rest of the main thread is the console's
    # other work (log follow, service poll, timers, input).
    spent = {"show_s": 0.0, "draw_s": 0.0, "draws": 0, "measuring": False}
    compositor_refresh = Screen._compositor_refresh

    def timed_compositor_refresh(screen: Screen) -> None:
        started = time.thread_time()
        compositor_refresh(screen)
        if spent["measuring"]:
            spent["draw_s"] += time.thread_time() - started
            spent["draws"] += 1

    Screen._compositor_refresh = timed_compositor_refresh  # type: ignore[method-assign]

    # The garbage collector's pauses land wherever an allocation triggers them (main thread).
    collecting = {"started": 0.0, "gc_s": 0.0, "collections": 0}

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collecting["started"] = time.thread_time()
        elif spent["measuring"]:
            collecting["gc_s"] += time.thread_time() - collecting["started"]
            collecting["collections"] += 1

    gc.callbacks.append(on_gc)

    class MeasuredApp(ServedeckApp):
        CSS_PATH = str(
            ROOT / "tui" / "app" / "app.tcss"
        )  # relative paths resolve against this module
        ticks = 0

        def measured_show(self, snapshot):  # type: ignore[no-untyped-def]
            result["gpus"] = snapshot.gpu_count
            started = time.thread_time()
            self.shown(snapshot)
            if spent["measuring"]:
                spent["show_s"] += time.thread_time() - started
            self.ticks += 1

        def on_mount(self) -> None:
            super().on_mount()
            # The GPU part's poll calls its show: each tick is timed there.
            self.shown, self.gpus.show = self.gpus.show, self.measured_show
            self.set_timer(args.warmup, self._window_start)

        def _window_start(self) -> None:
            self._t0 = (time.thread_time(), _process_cpu_s(), time.perf_counter(), self.ticks)
            spent["measuring"] = True
            if profiler is not None:
                profiler.enable()
            self.set_timer(args.seconds, self._window_end)

        def _window_end(self) -> None:
            if profiler is not None:
                profiler.disable()
            spent["measuring"] = False
            thread0, process0, wall0, ticks0 = self._t0
            ticks = self.ticks - ticks0
            result.update(
                ticks=ticks,
                wall_s=time.perf_counter() - wall0,
                main_thread_cpu_s=time.thread_time() - thread0,
                process_cpu_s=_process_cpu_s() - process0,
                profiled=profiler is not None,
                show_cpu_s=spent["show_s"],
                draw_cpu_s=spent["draw_s"],
                draws=spent["draws"],
                gc_cpu_s=collecting["gc_s"],
                gc_collections=collecting["collections"],
            )
            self.exit(0)

    try:
        MeasuredApp(profile, deck).run()
    finally:
        if box is not None:
            box.close()
    if profiler is not None:
        profiler.dump_stats(args.result + ".prof")
    Path(args.result).write_text(json.dumps(result))
    return 0


def _process_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_in_tmux(args: argparse.Namespace, profile: bool) -> dict[str, object]:
    folder = Path(tempfile.mkdtemp(prefix="servedeck-ticks-"))
    result = folder / "result.json"
    argv = [
        sys.executable, __file__, "--child", "--result", str(result),
        "--seconds", str(args.seconds), "--interval", str(args.interval),
        "--warmup", str(args.warmup),
    ] + (["--profile"] if profile else []) + (["--static"] if args.static else []) \
      + (["--local"] if args.local else [])  # fmt: skip
    # Textual draws on stderr: it must stay the terminal. The pane outlives the console
    # for a while, so an error it printed can still be read from the screen.
    command = f"cd {ROOT} && TERM=xterm-256color {' '.join(argv)}; sleep 60"
    session = f"ticks-{os.getpid()}"
    for attempt in range(3):  # a tmux server still shutting down refuses a new session
        started = subprocess.run(
            ["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", command]
        )
        if started.returncode == 0:
            break
        time.sleep(1.0 + attempt)
    else:
        raise SystemExit("gpu_pane_ticks: tmux could not start a session")
    screen = ""
    try:
        deadline = time.monotonic() + args.warmup + args.seconds + 60
        while not result.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        screen = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True
        ).stdout
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    if not result.exists():
        raise SystemExit(f"gpu_pane_ticks: no result; the terminal showed:\n{screen}")
    figures = json.loads(result.read_text())
    if profile:
        figures["profile_path"] = str(result) + ".prof"
    return figures


def print_breakdown(path: str, ticks: int) -> None:
    stats = pstats.Stats(path)
    rows = stats.stats  # type: ignore[attr-defined]
    total = sum(
        tt for (_, _, name), (_, _, tt, _, _) in rows.items() if "poll' of 'select" not in name
    )  # the loop waiting in epoll is idle time, not work
    print(f"\nprofiled main thread: {total * 1e3 / ticks:.2f} ms per tick (cProfile inflates)")
    print(f"  {'where (cumulative, nested)':<46} {'ms/tick':>8} {'share':>6}")
    for label, filename, function in BREAKDOWN:
        cumulative = sum(
            ct for (file, _, name), (_, _, _, ct, _) in rows.items()
            if file.endswith(filename) and name == function
        )  # fmt: skip
        print(f"  {label:<46} {cumulative * 1e3 / ticks:8.2f} {100 * cumulative / total:5.1f}%")
    print("\ntop functions by own time:")
    stats.sort_stats("tottime").print_stats(15)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--warmup", type=float, default=6.0)
    parser.add_argument("--static", action="store_true", help="no churn: an idle box")
    parser.add_argument("--local", action="store_true", help="this machine's GPUs, not the sim")
    parser.add_argument("--profile", action="store_true", help="also a cProfile window")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    if shutil.which("tmux") is None:
        print("gpu_pane_ticks: tmux is not installed", file=sys.stderr)
        return 2
    figures = run_in_tmux(args, profile=False)
    if "ticks" not in figures:
        raise SystemExit(f"gpu_pane_ticks: the console ended before the window: {figures}")
    ticks = int(figures["ticks"]) or 1
    per_tick_ms = 1e3 * float(figures["main_thread_cpu_s"]) / ticks
    figures["main_thread_ms_per_tick"] = round(per_tick_ms, 3)
    figures["process_ms_per_tick"] = round(1e3 * float(figures["process_cpu_s"]) / ticks, 3)
    show_ms = 1e3 * float(figures["show_cpu_s"]) / ticks
    draw_ms = 1e3 * float(figures["draw_cpu_s"]) / ticks
    figures["tick_ms"] = round(show_ms + draw_ms, 3)
    print(
        f"{figures['gpus']} {figures['source']} GPUs, churn={'on' if figures['churn'] else 'off'}, "
        f"{ticks} ticks at {args.interval:g} s in tmux 160x50:\n"
        f"  the tick itself          {show_ms + draw_ms:.2f} ms per tick (snapshot to rows "
        f"{show_ms:.2f} ms, screen updates {draw_ms:.2f} ms, {figures['draws']} updates)\n"
        f"  event loop (main thread) {per_tick_ms:.2f} ms per tick (all the console's work)\n"
        f"  whole process            {figures['process_ms_per_tick']:.2f} ms per tick\n"
        f"  garbage collection       {1e3 * float(figures['gc_cpu_s']) / ticks:.2f} ms per tick "
        f"({figures['gc_collections']} collections, inside the figures above)"
    )
    if args.profile:
        profiled = run_in_tmux(args, profile=True)
        print_breakdown(str(profiled["profile_path"]), int(profiled["ticks"]) or 1)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
