"""Console CPU with the flight recorder on vs off, in real terminals (tmux, 160x50).

    python tests/perf/record_console_cpu.py [--seconds 60] [--rounds 2] [--warmup 60]
    python tests/perf/record_console_cpu.py --previous DIR   (before/after, recording on)

Two `servedeck demo` consoles run side by side (each its own simulator and data
dir), one with SERVEDECK_RECORD=0; over the same windows the CPU time of each
console process alone (utime + stime; not the simulator's server processes) is read
from /proc. Prints both and the difference per window. With --previous DIR (another
checkout, e.g. `git archive COMMIT | tar -x -C DIR`) the two consoles are this tree's
and that one's, both recording: the demo console's CPU a minute, before and after.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.perf.app_vs_nvitop import TICKS_PER_S, start  # noqa: E402


def own_cpu_s(pid: int) -> float:
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def console_pid(pane_pid: int) -> int:
    """The python console under the pane's shell."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            ppid = int(text[text.rfind(")") + 2 :].split()[1])
            if ppid == pane_pid and b"tui" in cmdline:
                return int(entry)
        time.sleep(0.2)
    raise RuntimeError("console process not found")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warmup", type=float, default=60.0, help="the demo's load takes 45 s")
    parser.add_argument("--previous", type=Path, help="another checkout: before/after instead")
    args = parser.parse_args()
    # key -> (tree, SERVEDECK_RECORD); "0" is the baseline the change is measured against
    consoles = {"0": (ROOT, "0"), "1": (ROOT, "1")}
    labels = ("recording off", "on")
    if args.previous is not None:
        consoles = {"0": (args.previous.resolve(), "1"), "1": (ROOT, "1")}
        labels = ("previous", "this tree")
    sessions = {}
    pids = {}
    try:
        for key, (tree, record) in consoles.items():
            data = tempfile.mkdtemp(prefix=f"servedeck-rec{key}-")
            env = (
                f"PYTHONPATH={tree} TERM=xterm-256color SERVEDECK_RECORD={record} "
                f"SERVEDECK_DATA_DIR={data}/data SERVEDECK_LOG_DIR={data}/log SERVEDECK_CONFIG_DIR={data}/cfg"
            )
            name = f"rec-cpu-{key}"
            sessions[key] = name
            command = f"cd {tree} && {env} {sys.executable} -m tui demo"
            pids[key] = console_pid(start(name, command))
        time.sleep(args.warmup)
        for round_number in range(1, args.rounds + 1):
            before = {key: own_cpu_s(pid) for key, pid in pids.items()}
            time.sleep(args.seconds)
            used = {key: own_cpu_s(pid) - before[key] for key, pid in pids.items()}
            change = (used["1"] / used["0"] - 1) * 100 if used["0"] else float("nan")
            print(
                f"round {round_number}: console CPU over {args.seconds:g} s: "
                f"{labels[0]} {used['0']:.2f} s, {labels[1]} {used['1']:.2f} s ({change:+.1f} %)",
                flush=True,
            )
    finally:
        for name in sessions.values():
            subprocess.run(["tmux", "kill-session", "-t", name], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
