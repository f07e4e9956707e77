"""Whole-app CPU of the servedeck console against nvitop, side by side, same interval.

    python tests/perf/app_vs_nvitop.py [--seconds 60] [--interval 1] [--rounds 3]

Both run at once in real terminals (tmux, 160x50) on the same GPUs; the CPU time
of each process tree (utime + stime of every process, plus reaped children) is read
from /proc over the same windows after a warm-up. Prints both and the ratio for
each window, then the median ratio (CPU time of small loads varies run to run).
Needs tmux and nvitop (python -m nvitop); GPUs make the comparison meaningful.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def tree_cpu_s(root_pid: int) -> float:
    """CPU seconds of root_pid and all its descendants (including reaped children)."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        stats[int(entry)] = fields
        children.setdefault(int(fields[1]), []).append(int(entry))
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        fields = stats.get(pid)
        if fields is None:
            continue
        total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
        stack.extend(children.get(pid, []))
    return total / TICKS_PER_S


def start(session: str, command: str) -> int:
    # The pane stays open if the program exits, so its last screen can be read.
    wrapped = f"{command}; echo EXITED $?; sleep 3600"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", wrapped], check=True
    )
    time.sleep(0.5)
    pane_pid = subprocess.run(
        ["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()[0]  # fmt: skip
    return int(pane_pid)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--warmup", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=1, help="back-to-back windows")
    parser.add_argument(
        "--previous", type=Path, help="another servedeck checkout to run alongside (before/after)"
    )
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("app_vs_nvitop: tmux is not installed", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="servedeck-cpu-"))
    profile = folder / "local.toml"
    profile.write_text(f'[host]\nkind = "local"\n[gpu]\nrefresh_s = {args.interval}\n')
    env_prefix = f"PYTHONPATH={os.environ.get('PYTHONPATH', '')}:{ROOT} TERM=xterm-256color"
    sessions = {
        "servedeck": f"{env_prefix} {sys.executable} -m tui -p {profile}",
        "nvitop": f"{env_prefix} {sys.executable} -m nvitop --interval {args.interval}",
    }
    if args.previous is not None:
        previous = args.previous.resolve()
        sessions["previous"] = (
            f"cd {previous} && PYTHONPATH={os.environ.get('PYTHONPATH', '')}:{previous} "
            f"TERM=xterm-256color {sys.executable} -m tui -p {profile}"
        )
    pids = {}
    ratios: list[float] = []
    try:
        for name, command in sessions.items():
            pids[name] = start(f"cpu-{name}", command)
        time.sleep(args.warmup)
        for name in sessions:
            screen = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", f"cpu-{name}"], capture_output=True, text=True
            ).stdout
            (folder / f"{name}-screen.txt").write_text(screen)
            print(
                f"--- {name} screen after warm-up (first lines)\n"
                + "\n".join(screen.splitlines()[:6])
            )
        for round_number in range(1, args.rounds + 1):
            before = {name: tree_cpu_s(pid) for name, pid in pids.items()}
            time.sleep(args.seconds)
            after = {name: tree_cpu_s(pid) for name, pid in pids.items()}
            used = {name: after[name] - before[name] for name in sessions}
            print(
                f"\nround {round_number}: CPU seconds over {args.seconds:g} s "
                f"at {args.interval:g} s refresh (process tree):"
            )
            for name, seconds in used.items():
                share = 100 * seconds / args.seconds
                print(f"  {name:<10} {seconds:7.2f} s  ({share:5.1f}% of one core)")
            if used["nvitop"] > 0:
                ratios.append(used["servedeck"] / used["nvitop"])
                print(f"  ratio servedeck / nvitop = {ratios[-1]:.2f}")
    finally:
        for name in sessions:
            subprocess.run(["tmux", "kill-session", "-t", f"cpu-{name}"], capture_output=True)
    if ratios:
        print(
            f"\nratio servedeck / nvitop: median {statistics.median(ratios):.2f} over "
            f"{len(ratios)} round(s) ({', '.join(f'{r:.2f}' for r in ratios)}); target <= 0.5"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
