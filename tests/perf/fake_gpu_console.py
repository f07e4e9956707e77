"""Main-thread CPU of the console on one fake GPU, busy or idle: this tree against another.

    python tests/perf/fake_gpu_console.py [--seconds 60] [--rounds 3] [--idle] [--procs N]
                                          [--previous DIR [--previous-procs N]]

For machines without a GPU: the console runs in a real terminal (tmux, 160x50) on a local
profile whose GPU source is replaced by one fake H100 (busy: utilization, power and
temperature change every second, as a serving box's do; `--idle`: nothing changes; `--procs N`:
the GPU holds N real processes, sleeping children of the console, whose used memory and SM %
change every second as NVML reports a serving process's), at a
1 s refresh, the recorder on. After a warm-up, the CPU ticks of its main thread (the event
loop: the GPU rows' redraw, Textual's compositor, the timers) and of the whole process are
read from /proc over each window. With `--previous DIR` (another checkout) both consoles
run side by side in each round, the start order alternating, and the medians are compared;
`--previous . --previous-procs 0` compares this tree with and without GPU processes. Only
consoles of one round compare: on this shared VM the same console's CPU per window moves
2-3x with the machine's load.
On a real GPU box, tests/perf/h200_run.sh is the measurement that decides.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def child(busy: bool, procs: int = 0) -> int:
    """Run the console (argv after --child) with the fake GPU in place of NVML."""
    import tui.gpu.factory as factory
    from tui.cli import main
    from tui.gpu.model import GpuBoxSnapshot, GpuProcessUsage, GpuSample, GpuStatic
    from tui.gpu.procinfo import LocalProcessCache

    sleepers = [subprocess.Popen(["sleep", "infinity"]) for _ in range(procs)]
    details = LocalProcessCache()

    def holders() -> tuple[GpuProcessUsage, ...]:
        """The sleepers as NVML states a serving process: memory and SM % move every second;
        name, user and start from /proc, as the NVML source fills them."""
        usages = []
        for sleeper in sleepers:
            known = details.get(sleeper.pid)
            usages.append(
                GpuProcessUsage(
                    pid=sleeper.pid,
                    gpu_index=0,
                    used_memory_bytes=(30 << 30) + random.randint(0, 512) * (1 << 20),
                    process_name=known.command if known else "",
                    user=known.user if known else None,
                    started_at_s=known.started_at_s if known else None,
                    sm_util_percent=random.uniform(40, 50),
                    memory_util_percent=random.uniform(20, 30),
                )
            )
        return tuple(usages)

    static = GpuStatic(
        0, "NVIDIA H100 80GB HBM3", "GPU-1", "00000000:18:00.0", 80 << 30, "9.0", 0, 5, 16, 700.0
    )

    class FakeGpu:
        name = "fake"

        async def sample(self) -> GpuBoxSnapshot:
            util = random.uniform(90, 100) if busy else 0.0
            sample = GpuSample(
                0, (60 << 30) if busy else (1 << 20), 80 << 30, util, util * 0.6,
                (65 + random.randint(0, 1)) if busy else 35.0,
                (570 + random.uniform(-2, 2)) if busy else 70.0,
                700.0, 1980, 2619, 5, 16, 0.0, 0.0, 0, (), holders() if busy else (),
            )  # fmt: skip
            return GpuBoxSnapshot("nvml", time.time(), (static,), (sample,), "570.1", "12.8")

        async def aclose(self) -> None:
            return None

    async def fake_for(host: object, profile: object, interval_s: float = 1.0) -> FakeGpu:
        return FakeGpu()

    factory.gpu_source_for = fake_for  # type: ignore[assignment]
    Path(os.environ["FAKE_GPU_TREE_OUT"]).write_text(str(Path(factory.__file__).parents[2]))
    try:
        return main()
    finally:
        for sleeper in sleepers:
            sleeper.kill()


def cpu_ticks(pid: int) -> tuple[int, int]:
    """(main thread, whole process) utime + stime ticks."""
    ticks = []
    for path in (f"/proc/{pid}/task/{pid}/stat", f"/proc/{pid}/stat"):
        text = Path(path).read_text()
        fields = text[text.rfind(")") + 2 :].split()
        ticks.append(int(fields[11]) + int(fields[12]))
    return ticks[0], ticks[1]


def start(name: str, tree: Path, folder: Path, busy: bool, procs: int = 0) -> tuple[str, int, Path]:
    """The console of `tree` in a tmux session; returns (session, python pid, tree seen)."""
    profile = folder / "local.toml"
    home = folder / f"home-{name}"
    home.mkdir(exist_ok=True)
    seen = folder / f"tree-{name}"
    session = f"fakegpu-{name}-{os.getpid()}"
    env = (
        f"HOME={home} PYTHONPATH={tree} TERM=xterm-256color FAKE_GPU_TREE_OUT={seen} "
        f"PYTHONDONTWRITEBYTECODE=1"
    )
    command = (
        f"cd {tree} && {env} exec {sys.executable} {Path(__file__).resolve()} --child "
        f"{'--busy' if busy else ''} --procs {procs} -p {profile}"
    )
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", command], check=True
    )
    pid = int(
        subprocess.run(
            ["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"],
            capture_output=True, text=True, check=True,
        ).stdout.split()[0]
    )  # fmt: skip
    return session, pid, seen


def run_round(trees: dict[str, Path], args: argparse.Namespace, order: list[str]) -> dict:
    procs = {"this": args.procs, "previous": args.procs}
    if args.previous_procs is not None:
        procs["previous"] = args.previous_procs
    folder = Path(tempfile.mkdtemp(prefix="servedeck-fakegpu-"))
    (folder / "local.toml").write_text('[host]\nkind = "local"\n[gpu]\nrefresh_s = 1\n')
    started = {name: start(name, trees[name], folder, not args.idle, procs[name]) for name in order}
    try:
        time.sleep(args.warmup)
        before = {name: cpu_ticks(pid) for name, (_, pid, _) in started.items()}
        time.sleep(args.seconds)
        after = {name: cpu_ticks(pid) for name, (_, pid, _) in started.items()}
    finally:
        for session, _, _ in started.values():
            subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    result = {}
    for name, (_, _, seen) in started.items():
        if seen.read_text() != str(trees[name]):
            raise SystemExit(f"fake_gpu_console: {name} ran {seen.read_text()}, not {trees[name]}")
        main, process = (a - b for a, b in zip(after[name], before[name], strict=True))
        result[name] = {"main_thread_s": main / TICKS_PER_S, "process_s": process / TICKS_PER_S}
    shutil.rmtree(folder, ignore_errors=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=12.0)
    parser.add_argument("--idle", action="store_true", help="nothing on the GPU changes")
    parser.add_argument("--procs", type=int, default=0, help="GPU processes on the busy GPU")
    parser.add_argument("--previous", type=Path, help="another checkout, run side by side")
    parser.add_argument(
        "--previous-procs", type=int, help="GPU processes on the previous tree's GPU"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--busy", action="store_true", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.child:
        sys.argv = ["servedeck", *rest]
        return child(args.busy, args.procs)
    if shutil.which("tmux") is None:
        print("fake_gpu_console: tmux is not installed", file=sys.stderr)
        return 2
    trees = {"this": Path(__file__).resolve().parents[2]}
    if args.previous is not None:
        trees["previous"] = args.previous.resolve()
    state = "idle" if args.idle else "busy"
    if args.procs and not args.idle:
        state += f" with {args.procs} GPU process(es)"
    if args.previous_procs is not None:
        state += f" (previous: {args.previous_procs})"
    print(f"one fake GPU, {state}, {args.seconds:.0f} s windows, load {os.getloadavg()[0]:.1f}")
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for number in range(args.rounds):
        order = list(trees) if number % 2 == 0 else list(reversed(trees))
        for name, figures in run_round(trees, args, order).items():
            rounds[name].append(figures)
            print(
                f"  round {number + 1} {name:<8} main thread {figures['main_thread_s']:.2f} s, "
                f"process {figures['process_s']:.2f} s / {args.seconds:.0f} s"
            )
    print(f"load average now {os.getloadavg()[0]:.1f}")
    for name, measured in rounds.items():
        main_s = statistics.median(r["main_thread_s"] for r in measured)
        process_s = statistics.median(r["process_s"] for r in measured)
        print(f"median {name:<8} main thread {main_s:.2f} s, process {process_s:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
