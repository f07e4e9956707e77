"""Whole-app CPU of the servedeck console against nvitop, side by side, same interval.

    python tests/perf/app_vs_nvitop.py [--seconds 60] [--interval 1] [--rounds 3]
    python tests/perf/app_vs_nvitop.py --load --seconds 30 --rounds 3 --json busy.json

`--load` measures the idle rounds first, then starts tests/perf/gpu_load.py (a
duty cycle that changes every second and growing memory, one process per GPU) and
measures the same number of rounds with the GPUs busy; `--json` writes both.

Both run at once in real terminals (tmux, 160x50) on the same GPUs; the CPU time
of each process tree (utime + stime of every process, plus reaped children) is read
from /proc over the same windows after a warm-up. Prints both and the ratio for
each window, then the median ratio (CPU time of small loads varies run to run).
Needs tmux and nvitop (python -m nvitop); GPUs make the comparison meaningful.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def tree_threads(root_pid: int) -> dict[tuple[int, int], tuple[str, int]]:
    """Ticks (utime + stime) of every thread of root_pid's tree, keyed by (pid, tid), with a
    name: the process's command and the thread's own name where the OS has one."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(text[text.rfind(")") + 2 :].split()[1]), []).append(int(entry))
    found: dict[tuple[int, int], tuple[str, int]] = {}
    stack = [root_pid]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                text = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
                comm = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            except OSError:
                continue
            fields = text[text.rfind(")") + 2 :].split()
            ticks = int(fields[11]) + int(fields[12])
            found[(pid, int(tid))] = (f"{command[:60]} [{comm}]", ticks)
    return found


def python_thread_names(pid: int) -> dict[int, str]:
    """Python's names of a process's threads, from `py-spy dump` where it is installed."""
    spy = shutil.which("py-spy")
    if spy is None:
        return {}
    result = subprocess.run(
        [spy, "dump", "--pid", str(pid)], capture_output=True, text=True, check=False
    )
    names = {}
    for line in result.stdout.splitlines():
        if line.startswith("Thread "):  # Thread 27786 (idle): "MainThread"
            head, _, name = line.partition(": ")
            tid = head.split()[1]
            if tid.isdigit():
                names[int(tid)] = name.strip().strip('"')
    return names


def print_breakdown(
    label: str,
    before: dict[tuple[int, int], tuple[str, int]],
    after: dict[tuple[int, int], tuple[str, int]],
    reaped_s: float,
    names: dict[int, str],
) -> list[dict[str, Any]]:
    """Which thread of which process spent the window's ticks; children that ended inside
    the window show only as the reaped total (a per-refresh process would show there)."""
    rows = []
    for key, (name, ticks) in after.items():
        spent = ticks - before.get(key, (name, 0))[1]
        started = key not in before
        if spent or started:
            thread = names.get(key[1])
            rows.append(
                {
                    "pid": key[0], "tid": key[1], "ticks": spent, "started": started,
                    "what": name + (f" {thread}" if thread else ""),
                }
            )  # fmt: skip
    rows.sort(key=lambda row: -int(row["ticks"]))
    print(f"  {label} breakdown ({TICKS_PER_S} ticks a second):")
    for row in rows:
        new = " (new in this window)" if row["started"] else ""
        print(f"    {row['ticks']:4} ticks  pid {row['pid']} tid {row['tid']}  {row['what']}{new}")
    print(f"    reaped children: {reaped_s:.2f} s")
    return rows


def reaped_children_s(root_pid: int) -> float:
    """cutime + cstime of the tree's processes: children that ended and were waited for."""
    total = 0
    for (pid, tid), _ in tree_threads(root_pid).items():
        if pid != tid:
            continue
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        total += int(fields[13]) + int(fields[14])
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
    parser.add_argument("--load", action="store_true", help="idle rounds, then busy GPUs")
    parser.add_argument("--json", type=Path, help="write the rounds and medians here")
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
    rounds: dict[str, list[dict[str, Any]]] = {}
    load: subprocess.Popen[str] | None = None
    try:
        for name, command in sessions.items():
            pids[name] = start(f"cpu-{name}", command)
        time.sleep(args.warmup)
        show_screens(sessions, folder, "warm-up")
        rounds["idle"] = measure(pids, args, "idle" if args.load else "")
        if args.load:
            load = start_load(args)
            time.sleep(args.warmup)
            show_screens(sessions, folder, "load warm-up")
            rounds["busy"] = measure(pids, args, "busy")
    finally:
        for name in sessions:
            subprocess.run(["tmux", "kill-session", "-t", f"cpu-{name}"], capture_output=True)
        if load is not None:
            load.terminate()
            try:
                load.wait(timeout=30)
            except subprocess.TimeoutExpired:
                load.kill()
    summary: dict[str, object] = {"gpus": gpu_count(), "interval_s": args.interval}
    for label, measured in rounds.items():
        ratios = [r["ratio"] for r in measured if "ratio" in r]
        if ratios:
            print(
                f"\n{label}: ratio servedeck / nvitop: median {statistics.median(ratios):.2f} over "
                f"{len(ratios)} round(s) ({', '.join(f'{r:.2f}' for r in ratios)}); target <= 0.5"
            )
        key = "busy" if args.load else "idle"
        part = {"rounds": measured, "ratio_median": statistics.median(ratios) if ratios else None}
        if label == key:
            summary.update(part)
        else:
            summary[label] = part
    summary["window_s"] = args.seconds
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


def show_screens(sessions: dict[str, str], folder: Path, when: str) -> None:
    for name in sessions:
        screen = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", f"cpu-{name}"], capture_output=True, text=True
        ).stdout
        (folder / f"{name}-screen.txt").write_text(screen)
        print(
            f"--- {name} screen after {when} (first lines)\n" + "\n".join(screen.splitlines()[:12])
        )


def measure(pids: dict[str, int], args: argparse.Namespace, label: str) -> list[dict[str, Any]]:
    """args.rounds back-to-back windows: CPU seconds of each process tree, and the ratio."""
    measured: list[dict[str, Any]] = []
    for round_number in range(1, args.rounds + 1):
        consoles = [name for name in pids if name != "nvitop"]
        threads_before = {name: tree_threads(pids[name]) for name in consoles}
        reaped_before = {name: reaped_children_s(pids[name]) for name in consoles}
        before = {name: tree_cpu_s(pid) for name, pid in pids.items()}
        time.sleep(args.seconds)
        after = {name: tree_cpu_s(pid) for name, pid in pids.items()}
        threads_after = {name: tree_threads(pids[name]) for name in consoles}
        reaped_s = {name: reaped_children_s(pids[name]) - reaped_before[name] for name in consoles}
        used = {name: after[name] - before[name] for name in pids}
        print(
            f"\n{label + ' ' if label else ''}round {round_number}: CPU seconds over "
            f"{args.seconds:g} s at {args.interval:g} s refresh (process tree):"
        )
        for name, seconds in used.items():
            share = 100 * seconds / args.seconds
            print(f"  {name:<10} {seconds:7.2f} s  ({share:5.1f}% of one core)")
        entry: dict[str, Any] = {f"{name}_cpu_s": round(s, 3) for name, s in used.items()}
        if used["nvitop"] > 0:
            entry["ratio"] = round(used["servedeck"] / used["nvitop"], 3)
            print(f"  ratio servedeck / nvitop = {entry['ratio']:.2f}")
        for name in consoles:
            names: dict[int, str] = {}
            for (pid, tid), (what, _) in threads_after[name].items():
                if pid == tid and "-m tui" in what:
                    names.update(python_thread_names(pid))
            entry[f"{name}_breakdown"] = print_breakdown(
                name, threads_before[name], threads_after[name], reaped_s[name], names
            )
            entry[f"{name}_reaped_s"] = round(reaped_s[name], 3)
        measured.append(entry)
    return measured


def start_load(args: argparse.Namespace) -> subprocess.Popen[str]:
    """tests/perf/gpu_load.py for the busy rounds; returns once every GPU is loaded."""
    seconds = args.warmup + args.rounds * args.seconds + 120
    load = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("gpu_load.py")), "--seconds", str(seconds)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert load.stdout is not None
    line = load.stdout.readline()
    if not line.startswith("ready"):
        load.kill()
        raise SystemExit(f"app_vs_nvitop: the GPU load did not start ({line.strip()!r})")
    print(f"\n--- {line.strip()}")
    return load


def gpu_count() -> int:
    result = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return sum(1 for line in result.stdout.splitlines() if line.startswith("GPU "))


if __name__ == "__main__":
    raise SystemExit(main())
