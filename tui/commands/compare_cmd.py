"""`servedeck bench compare A B`: the configuration diff and each metric's change with its noise.

A and B are run ids (or unique prefixes) from the benchmark history, or -1 and
-2 for the newest and the one before; `--json` prints the comparison as data.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from tui.bench.compare import compare_runs, config_diff, find_run, format_comparison
from tui.bench.history import read_history
from tui.core.errors import UsageError


def run_compare(args: argparse.Namespace) -> int:
    operands = list(args.operands)
    if len(operands) != 3 or operands[0] != "compare":
        raise UsageError("usage: servedeck bench compare A B (run ids from the history, or -1 -2)")
    history = read_history()
    a, b = find_run(history, operands[1]), find_run(history, operands[2])
    changes = compare_runs(a, b, history)
    if args.json:
        body = {
            "a": a.run_id,
            "b": b.run_id,
            "config_diff": [
                {"field": name, "a": left, "b": right} for name, left, right in config_diff(a, b)
            ],
            "metrics": [
                {**asdict(change), "change_pct": change.change_pct, "verdict": change.verdict}
                for change in changes
            ],
        }
        print(json.dumps(body, indent=2))
    else:
        print(format_comparison(a, b, changes))
    return 0
