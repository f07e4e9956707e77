"""Import time of the console, module by module: the median of N fresh interpreters.

`python -X importtime` in one run is noisy on a busy machine; the median over runs
is what the cold-start work is measured against. Run:
    python tests/perf/import_time.py [--runs 7] [--module tui.app] [--top 25]
Prints the total, the direct imports of the module (cumulative ms) and the modules
with the largest own (self) time.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def one_run(module: str) -> list[tuple[int, str, int, int]]:
    """(depth, name, self_us, cumulative_us) for every module first imported by `module`."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    rows: list[tuple[int, str, int, int]] = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line.removeprefix("import time:").split("|")
        depth = (len(name) - len(name.lstrip(" "))) // 2
        rows.append((depth, name.strip(), int(self_us), int(cumulative_us)))
    # Only the subtree of `module` (it is printed last, its imports before it).
    end = max(i for i, row in enumerate(rows) if row[1] == module and row[0] == 0)
    start = end
    while start > 0 and rows[start - 1][0] > 0:
        start -= 1
    return rows[start : end + 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--module", default="tui.app")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    direct: dict[str, list[int]] = defaultdict(list)
    own: dict[str, list[int]] = defaultdict(list)
    totals: list[int] = []
    for _ in range(args.runs):
        for depth, name, self_us, cumulative_us in one_run(args.module):
            own[name].append(self_us)
            if depth == 1:
                direct[name].append(cumulative_us)
            if depth == 0:
                totals.append(cumulative_us)
    print(f"import {args.module}: median {statistics.median(totals) / 1000:.1f} ms (n={args.runs})")
    print("\ndirect imports, cumulative ms (median; only modules not already loaded count):")
    ranked = sorted(direct.items(), key=lambda item: -statistics.median(item[1]))
    for name, samples in ranked[: args.top]:
        print(f"  {statistics.median(samples) / 1000:7.1f}  {name}")
    print(f"\nown time, ms (median), top {args.top}:")
    ranked = sorted(own.items(), key=lambda item: -statistics.median(item[1]))
    for name, samples in ranked[: args.top]:
        print(f"  {statistics.median(samples) / 1000:7.1f}  {name}")
    print(
        f"\nmodules loaded: {len(own)}; servedeck's own: "
        f"{sum(1 for name in own if name.split('.')[0] in ('tui', 'widgets'))}"
    )


if __name__ == "__main__":
    main()
