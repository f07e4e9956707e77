"""Whole-app CPU of the servedeck console against nvitop, side by side, same interval.

    python tests/perf/app_vs_nvitop.py [--seconds 60] [--interval 1]

Both run at once in real terminals (tmux, 160x50) on the same GPUs; the CPU time
of each process tree (utime + stime of every process, plus reaped children) is read
from /proc over the same window after a warm-up. Prints both and the ratio.
Needs tmux and nvitop (python -m nvitop); GPUs make the comparison meaningful.
"""

from __future__ import annotations

import argparse
import os
import shutil
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
    pids = {}
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
        before = {name: tree_cpu_s(pid) for name, pid in pids.items()}
        time.sleep(args.seconds)
        after = {name: tree_cpu_s(pid) for name, pid in pids.items()}
    finally:
        for name in sessions:
            subprocess.run(["tmux", "kill-session", "-t", f"cpu-{name}"], capture_output=True)
    used = {name: after[name] - before[name] for name in sessions}
    print(f"\nCPU seconds over {args.seconds:g} s at {args.interval:g} s refresh (process tree):")
    for name, seconds in used.items():
        print(f"  {name:<10} {seconds:7.2f} s  ({100 * seconds / args.seconds:5.1f}% of one core)")
    if used["nvitop"] > 0:
        print(
            f"  ratio servedeck / nvitop = {used['servedeck'] / used['nvitop']:.2f} (target <= 0.5)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
