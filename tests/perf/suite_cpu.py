"""Where the test suite's time and CPU go: per test file and per test, under pytest-xdist.

    python tests/perf/suite_cpu.py [pytest arguments, default: -n 4 tests]

Runs pytest with a plugin that writes each test's start and end (worker pid, time), and
samples every process on the machine once a second meanwhile: its CPU time (utime+stime
from /proc/PID/stat) and its audit login uid. Under xdist each worker has a login uid of
its own that everything it starts inherits, orphans and the test sshd's sessions
included (tests/support/worker_scope.py), so a second's CPU is charged to the test its
worker was running then. A process that starts and ends within one sample is missed
(short CLI runs: the totals are a floor); CPU of processes outside every worker
(other work on the machine) is shown apart. Prints the machine's idle share too.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from bisect import bisect_right
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.support.worker_scope import LOGINUID_BASE  # noqa: E402

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
SAMPLE_INTERVAL_S = 1.0
EVENTS_ENV = "SERVEDECK_SUITE_EVENTS"


# ---- the pytest plugin (loaded in every worker with -p tests.perf.suite_cpu) ----------


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    _event("start", nodeid)


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    _event("end", nodeid)


def _event(kind: str, nodeid: str) -> None:
    path = os.environ.get(EVENTS_ENV)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not path or not worker:
        return
    record = {"ev": kind, "n": nodeid.split("@")[0], "t": time.time(), "pid": os.getpid()}
    with open(path, "a") as handle:
        handle.write(json.dumps(record) + "\n")


# ---- the sampler --------------------------------------------------------------------


def cpu_by_process() -> dict[tuple[str, str], tuple[int, float]]:
    """(pid, start time) -> (login uid, CPU seconds so far), for every process."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            loginuid = int(Path(f"/proc/{name}/loginuid").read_text())
        except (OSError, ValueError):
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        cpu_s = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_S
        found[(name, fields[19])] = (loginuid, cpu_s)
    return found


def idle_ticks() -> tuple[int, int]:
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return values[3] + values[4], sum(values)


class Sampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, dict[int, float]]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        before = cpu_by_process()
        while not self.stop.wait(SAMPLE_INTERVAL_S):
            now = cpu_by_process()
            spent: dict[int, float] = collections.Counter()
            for key, (loginuid, cpu_s) in now.items():
                earlier = before.get(key)
                spent[loginuid] += cpu_s - (earlier[1] if earlier else 0.0)
            self.samples.append((time.time(), dict(spent)))
            before = now


def main() -> int:
    args = sys.argv[1:] or ["-n", "4", "tests"]
    events = Path(tempfile.mkstemp(prefix="suite-events-", suffix=".jsonl")[1])
    env = {**os.environ, EVENTS_ENV: str(events), "PYTHONPATH": str(REPO)}
    sampler = Sampler()
    idle_before = idle_ticks()
    started = time.time()
    sampler.start()
    code = subprocess.call(
        [sys.executable, "-m", "pytest", "-p", "tests.perf.suite_cpu", "-q", *args],
        cwd=REPO,
        env=env,
    )
    sampler.stop.set()
    sampler.join()
    wall_s = time.time() - started
    idle_after = idle_ticks()
    idle_share = (idle_after[0] - idle_before[0]) / max(1, idle_after[1] - idle_before[1])
    report(events, sampler.samples, wall_s, idle_share)
    events.unlink(missing_ok=True)
    return code


def report(
    events: Path, samples: list[tuple[float, dict[int, float]]], wall_s: float, idle: float
) -> None:
    spans: dict[int, list[tuple[float, float, str]]] = collections.defaultdict(list)
    open_spans: dict[tuple[int, str], float] = {}
    for line in events.read_text().splitlines():
        event = json.loads(line)
        key = (LOGINUID_BASE + event["pid"], event["n"])
        if event["ev"] == "start":
            open_spans[key] = event["t"]
        elif key in open_spans:
            spans[key[0]].append((open_spans.pop(key), event["t"], event["n"]))
    starts = {uid: [start for start, _end, _name in sorted(found)] for uid, found in spans.items()}
    for found in spans.values():
        found.sort()
    per_test: dict[str, float] = collections.Counter()
    outside_s = 0.0
    for at, spent in samples:
        for uid, cpu_s in spent.items():
            if uid not in spans:
                outside_s += cpu_s
                continue
            index = bisect_right(starts[uid], at) - 1
            per_test[spans[uid][index][2] if index >= 0 else "(worker start)"] += cpu_s
    wall_by_test = {name: end - start for found in spans.values() for start, end, name in found}
    per_file: dict[str, float] = collections.Counter()
    wall_by_file: dict[str, float] = collections.Counter()
    for name, cpu_s in per_test.items():
        per_file[name.split("::")[0]] += cpu_s
    for name, seconds in wall_by_test.items():
        wall_by_file[name.split("::")[0]] += seconds
    in_workers = sum(per_test.values())
    print(f"\nwall {wall_s:.0f} s; machine idle {idle:.0%}")
    print(f"CPU seen: {in_workers:.0f} s in the workers' process trees, {outside_s:.0f} s outside")
    print("\n  CPU s   wall s  test file (wall: the tests' own, summed)")
    for name, cpu_s in per_file.most_common(25):
        print(f"{cpu_s:7.1f}  {wall_by_file.get(name, 0):7.1f}  {name}")
    print("\n  CPU s   wall s  test")
    for name, cpu_s in per_test.most_common(25):
        print(f"{cpu_s:7.1f}  {wall_by_test.get(name, 0):7.1f}  {name[:110]}")


if __name__ == "__main__":
    raise SystemExit(main())
