"""`servedeck serve` figures, measured in a real headless Chromium:

- time from page load (navigation start) to the first rendered console (the GPU table
  and header read back from the page's terminal), over several visits;
- memory per visitor: RSS and PSS of the visitor's console process alone and of its
  whole tree (the demo's simulated box included), and the server's growth per visitor;
- CPU of an idle visitor: the console (and its tree, and the server relaying its
  output) over a 60 s window with the page open and untouched, next to the same
  console idling in a terminal (tmux, same size) when tmux is installed.

Run: python tests/perf/browser_visit.py [--visits 3] [--idle-s 60] [--local]
--local serves the plain local console instead of the demo (no simulated box).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.support.browser_support import ServeProcess, chromium, descendants, wait_for, wait_screen  # noqa: E402

TICKS_S = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """utime + stime of one process, in seconds (0 once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_S


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in KiB from /proc/PID/smaps_rollup."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visits", type=int, default=3)
    parser.add_argument("--idle-s", type=float, default=60.0)
    parser.add_argument("--local", action="store_true", help="the local console, not the demo")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="servedeck-perf-"))
    for name in ("CONFIG", "DATA", "LOG"):
        os.environ[f"SERVEDECK_{name}_DIR"] = str(scratch / name.lower())
    serve_args = [] if args.local else ["--demo"]
    mark = "browser, read-only" if args.local else "RTX PRO 6000"
    server = ServeProcess(*serve_args)
    print(f"servedeck serve {' '.join(serve_args)} (pid {server.pid}); {args.visits} visit(s)")
    try:
        with chromium() as browser:
            to_render: list[float] = []
            to_first_byte: list[float] = []
            for _ in range(args.visits):
                page = browser.new_page()
                started = time.monotonic()
                page.goto(server.url)
                page.wait_for_function(
                    "() => document.body.classList.contains('-first-byte')", timeout=120_000
                )
                to_first_byte.append(time.monotonic() - started)
                wait_screen(page, lambda s: mark in s and "Help" in s, 120, "the console")
                to_render.append(time.monotonic() - started)
                (console,) = server.consoles()
                page.close()
                wait_for(lambda c=console: c not in server.consoles(), 60, "the console's end")
            print(
                f"page load -> first console output: median {statistics.median(to_first_byte):.2f} s"
                f" (min {min(to_first_byte):.2f}, max {max(to_first_byte):.2f})"
            )
            print(
                f"page load -> console rendered ({mark!r} on screen): median "
                f"{statistics.median(to_render):.2f} s (min {min(to_render):.2f}, "
                f"max {max(to_render):.2f})"
            )

            server_before_kib = memory_kib(server.pid)[0]
            page = browser.new_page()
            page.goto(server.url)
            wait_screen(page, lambda s: mark in s and "Help" in s, 120, "the console")
            (console,) = server.consoles()
            time.sleep(5)  # let the first polls settle before measuring
            tree = [console, *descendants(console)]
            console_rss, console_pss = memory_kib(console)
            tree_mem = [memory_kib(pid) for pid in tree]
            print(
                f"memory per visitor: console process RSS {mib(console_rss)}, PSS {mib(console_pss)}"
            )
            print(
                f"  its whole tree ({len(tree)} processes): RSS {mib(sum(r for r, _ in tree_mem))}, "
                f"PSS {mib(sum(p for _, p in tree_mem))}"
            )
            print(
                f"  server RSS with one visitor: +{mib(memory_kib(server.pid)[0] - server_before_kib)}"
            )

            tree = [console, *descendants(console)]
            before = {pid: cpu_s(pid) for pid in [*tree, server.pid]}
            window_started = time.monotonic()
            time.sleep(args.idle_s)
            window_s = time.monotonic() - window_started
            used = {pid: cpu_s(pid) - before[pid] for pid in before}
            console_pct = 100 * used[console] / window_s
            tree_pct = 100 * sum(used[pid] for pid in tree) / window_s
            server_pct = 100 * used[server.pid] / window_s
            print(
                f"idle visitor over {window_s:.0f} s (page open, untouched): console "
                f"{console_pct:.1f}% of one core, its tree {tree_pct:.1f}%, "
                f"server relaying {server_pct:.1f}%"
            )
            size = page.evaluate(
                "() => [window.__servedeckTerminals[0].terminal.cols,"
                " window.__servedeckTerminals[0].terminal.rows]"
            )
            page.close()
            wait_for(lambda: not server.consoles(), 60, "the console's end")
    finally:
        server.stop()
    if shutil.which("tmux"):
        terminal_pct = terminal_idle_cpu(serve_args, size, args.idle_s)
        print(
            f"the same console in a terminal (tmux, {size[0]}x{size[1]}) over {args.idle_s:.0f} s: "
            f"console {terminal_pct:.1f}% of one core"
        )
    return 0


def terminal_idle_cpu(serve_args: list[str], size: list[int], idle_s: float) -> float:
    """The same console, same size, in tmux: what an idle visitor is compared with."""
    argv = [sys.executable, "-m", "tui", "--read-only"]
    if "--demo" in serve_args:
        argv += ["demo"]
    socket_name = f"servedeck-perf-{os.getpid()}"
    tmux = ["tmux", "-L", socket_name]
    subprocess.run(
        [
            *tmux,
            "new-session",
            "-d",
            "-x",
            str(size[0]),
            "-y",
            str(size[1]),
            "exec " + shlex.join(argv),
        ],
        check=True,
        cwd=REPO,
    )
    try:
        pane = subprocess.run(
            [*tmux, "list-panes", "-F", "#{pane_pid}"], capture_output=True, text=True, check=True
        )
        console = int(pane.stdout.split()[0])
        time.sleep(10)  # started and settled, as the browser visitor was
        before = cpu_s(console)
        time.sleep(idle_s)
        return 100 * (cpu_s(console) - before) / idle_s
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)


if __name__ == "__main__":
    raise SystemExit(main())
