"""How often servedeck's 95 % intervals cover the simulator's truth, over 40 short seeded runs.

A real simulator (the test suite's fast settings: 4 ms decode step) serves closed-loop
runs at one stream, input lengths drawn uniformly from 16..48 tokens and output lengths
from 2..40 (so TTFT and E2EL vary from request to request; TPOT barely does). Each of
--runs levels (each its own seed) sends --requests requests; its 95 % interval of the
mean, p50, p90 and p99 of TTFT, TPOT and E2EL (tui.bench.uncertainty) is checked against
the truth, measured over a population level of --population requests of the same
distribution, two ways:
- server: the simulator's own account of each population request (/_sim/truth: first
  token and last token minus arrival, decode time over output tokens - 1), what the
  issue calls the truth; it lacks the client's own cost of HTTP and parsing;
- client: the same figure over the population as servedeck measured it; this isolates
  whether the interval is statistically right from the client's constant offset.

An interval open above (too few requests above the percentile: "p99 >= X, upper bound
unknown") covers a truth above its lower end; "open above" counts them.
Percentiles use the nearest rank (as the intervals' point values do). "runs sd/se" is
the spread of the runs' own point values over the standard error their intervals imply
(mean width / 3.92, over the intervals closed above): near 1 when a run's requests account for the run-to-run spread,
above 1 when the runs differ by more (the server's speed moving between runs).

"lag-1 r" is the mean over runs of the lag-1 autocorrelation of a run's requests in the
order they were sent: near 0 when the requests of a run are independent (the bootstrap
over requests is then the right resampling unit; a block bootstrap would give the same
width), clearly above 0 when neighbouring requests share the server's state (then
only a bootstrap over time blocks would widen the interval to match). A run-to-run
spread above 1 with lag-1 r near 0 is a drift between runs (a loaded machine's speed),
which no interval from one run's requests can see: measure coverage on a quiet box.

Needs no network (the simulator runs on 127.0.0.1). One command, 40 runs in about
3 minutes on a quiet machine:
     .venv/bin/python tests/perf/bench_interval_coverage.py --runs 40 --json OUT.json
Options: [--runs 40] [--requests 24] [--population 480] [--seed 11] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.sim_fixtures import FAST_OPTIONS, SIM_LOAD_SECONDS  # noqa: E402
from tui.bench.driver import run_bench  # noqa: E402
from tui.bench.model import BenchResult  # noqa: E402
from tui.bench.uncertainty import nearest_rank  # noqa: E402
from tui.bench.workload import BenchSpec  # noqa: E402
from tui.sim.box import SimBox  # noqa: E402

METRICS = ("ttft_ms", "tpot_ms", "e2el_ms")
FIGURES = ("mean", "p50", "p90", "p99")


def figure_of(values: Sequence[float], figure: str) -> float:
    ordered = sorted(values)
    if figure == "mean":
        return math.fsum(ordered) / len(ordered)
    return ordered[nearest_rank(len(ordered), float(figure[1:])) - 1]


def server_population(records: list[dict[str, object]]) -> dict[str, list[float]]:
    """Per-request TTFT, TPOT and E2E in ms, as the simulator accounts for them."""
    out: dict[str, list[float]] = {name: [] for name in METRICS}
    for r in records:
        ttft, decode, tokens = float(r["ttft_s"]), float(r["decode_s"]), int(r["output_tokens"])  # type: ignore[arg-type]
        out["ttft_ms"].append(1000 * ttft)
        out["e2el_ms"].append(1000 * (float(r["last_token_s"]) - float(r["arrival_s"])))  # type: ignore[arg-type]
        if tokens > 1:
            out["tpot_ms"].append(1000 * decode / (tokens - 1))
    return out


def client_population(path: Path) -> dict[str, list[float]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    ok = [row for row in rows if row["success"]]
    return {name: [float(row[name]) for row in ok if row[name] is not None] for name in METRICS}


async def last_number(url: str) -> int:
    async with httpx.AsyncClient(timeout=30.0) as client:
        records = (await client.get(f"{url}/_sim/truth")).json()["requests"]
    return max((int(r["number"]) for r in records), default=0)


async def truth_since(url: str, since: int) -> list[dict[str, object]]:
    async with httpx.AsyncClient(timeout=30.0) as client:
        got = await client.get(f"{url}/_sim/truth", params={"since": since})
    return [r for r in got.json()["requests"] if r["finish_reason"] != "abort"]


async def measure(args: argparse.Namespace, url: str, out: Path) -> None:
    spec = BenchSpec(
        base_url=url, input_tokens=32, input_dist="uniform", input_range="16:48",
        output_tokens=21, output_dist="uniform", output_range="2:40",
        concurrency=(1,), num_requests=args.population, warmup_requests=1,
        read_timeout_s=60.0, progress_interval_s=1.0, seed=args.seed,
        percentiles=(50.0, 90.0, 99.0), requests_path=str(out / "population.jsonl"),
    )  # fmt: skip
    since = await last_number(url)
    started = time.monotonic()
    population: BenchResult = await run_bench(spec)
    records = await truth_since(url, since)
    server = server_population(records[1:])  # the first is the warm-up
    client = client_population(out / "population.jsonl")
    print(f"population: {population.levels[0].completed} requests in"
          f" {time.monotonic() - started:.0f} s; prompts {population.client.get('prompt_method')}")  # fmt: skip
    truth = {
        side: {(m, f): figure_of(values[m], f) for m in METRICS for f in FIGURES}
        for side, values in (("server", server), ("client", client))
    }
    runs = replace(
        spec, num_requests=args.requests, concurrency=(1,) * args.runs, seed=args.seed + 1,
        requests_path=str(out / "runs.jsonl"), progress_interval_s=2.0,
    )  # fmt: skip
    started = time.monotonic()
    result = await run_bench(runs)
    print(f"{args.runs} runs of {args.requests} requests in {time.monotonic() - started:.0f} s")
    lags = lag1_by_metric(out / "runs.jsonl", args.requests)
    covered = {side: dict.fromkeys(truth[side], 0) for side in truth}
    widths: dict[tuple[str, str], list[float]] = {key: [] for key in truth["server"]}
    points: dict[tuple[str, str], list[float]] = {key: [] for key in truth["server"]}
    opened = dict.fromkeys(truth["server"], 0)
    counted = 0
    for level in result.levels:
        if level.uncertainty is None or level.completed < args.requests:
            continue
        counted += 1
        for m in METRICS:
            intervals = level.uncertainty.metric(m)
            assert intervals is not None
            for f in FIGURES:
                interval = intervals.get(f)
                assert interval is not None, (m, f)
                if interval.high is None:
                    opened[(m, f)] += 1  # too few requests above it: covered when above low
                else:
                    widths[(m, f)].append(interval.high - interval.low)
                points[(m, f)].append(interval.value)
                for side in truth:
                    covered[side][(m, f)] += interval.covers(truth[side][(m, f)])
    rows = []
    print(f"\n{counted} runs counted; 95 % intervals covering the truth (nominal 95 %)")
    print(f"{'figure':<14} {'runs':>5} {'server truth':>12} {'covered':>8} {'client truth':>12}"
          f" {'covered':>8} {'median width':>12} {'runs sd/se':>10} {'open above':>10}")  # fmt: skip
    for m in METRICS:
        for f in FIGURES:
            key = (m, f)
            width = statistics.median(widths[key]) if widths[key] else None
            mean_width = statistics.mean(widths[key]) if widths[key] else None
            spread = statistics.stdev(points[key]) if len(points[key]) > 1 else 0.0
            ratio = spread / (mean_width / 3.92) if mean_width else None
            row = {
                "metric": m, "figure": f, "runs": counted,
                "server_truth": truth["server"][key],
                "coverage_server_pct": 100 * covered["server"][key] / max(counted, 1),
                "client_truth": truth["client"][key],
                "coverage_client_pct": 100 * covered["client"][key] / max(counted, 1),
                "median_width": width, "runs_sd_over_se": ratio, "open_above": opened[key],
            }  # fmt: skip
            rows.append(row)
            print(
                f"{m[:-3] + ' ' + f:<14} {counted:>5} {row['server_truth']:10.2f}ms"
                f" {row['coverage_server_pct']:7.0f}%"
                f" {row['client_truth']:10.2f}ms {row['coverage_client_pct']:7.0f}%"
                + (f" {'n/a (open)':>12} {'n/a':>10}" if width is None or ratio is None else
                   f" {width:10.2f}ms {ratio:10.2f}")
                + f" {opened[key]:>10}"
            )  # fmt: skip
    offset = {m: truth["client"][(m, "p50")] - truth["server"][(m, "p50")] for m in METRICS}
    print("\nclient minus server, p50: " + ", ".join(f"{m} {v:+.2f} ms" for m, v in offset.items()))
    print("lag-1 autocorrelation within runs (mean over runs): "
          + ", ".join(f"{m} {v:+.3f}" for m, v in lags.items()))  # fmt: skip
    if args.json:
        body = {
            "runs": args.runs, "requests": args.requests, "population": args.population,
            "seed": args.seed, "load_average": list(os.getloadavg()), "cpus": os.cpu_count(),
            "client_minus_server_p50_ms": offset, "lag1_autocorrelation": lags,
            "statistics": rows,
        }  # fmt: skip
        Path(args.json).write_text(json.dumps(body, indent=2) + "\n")
        print(f"wrote {args.json}")


def lag1(values: Sequence[float]) -> float | None:
    """The lag-1 autocorrelation of a sequence (None when it has no spread)."""
    if len(values) < 3:
        return None
    mean = statistics.fmean(values)
    denominator = math.fsum((v - mean) ** 2 for v in values)
    if denominator == 0:
        return None
    return math.fsum((a - mean) * (b - mean) for a, b in itertools.pairwise(values)) / denominator


def lag1_by_metric(path: Path, requests: int) -> dict[str, float | None]:
    """Per metric, the mean over runs of the requests' lag-1 autocorrelation in send order."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_run: dict[int, list[dict[str, object]]] = {}
    for row in rows:
        by_run.setdefault(int(row["level"]), []).append(row)
    found: dict[str, list[float]] = {m: [] for m in METRICS}
    for run in by_run.values():
        ok = sorted((r for r in run if r["success"]), key=lambda r: int(r["request"]))  # type: ignore[call-overload]
        if len(ok) < requests // 2:
            continue
        for m in METRICS:
            if (r := lag1([float(row[m]) for row in ok if row[m] is not None])) is not None:  # type: ignore[arg-type]
                found[m].append(r)
    return {m: statistics.fmean(v) if v else None for m, v in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--requests", type=int, default=24)
    parser.add_argument("--population", type=int, default=480)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", default="", help="write the table as JSON to this path")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="bench-coverage-"))
    box = SimBox(out / "sim", seed=7, load_seconds=SIM_LOAD_SECONDS, options=FAST_OPTIONS)
    try:
        box.start()
        state = box.wait_until_active(timeout_s=90)
        assert state == "active", box.log_path.read_text()[-3000:]
        asyncio.run(measure(args, box.base_url, out))
    finally:
        box.close()


if __name__ == "__main__":
    main()
