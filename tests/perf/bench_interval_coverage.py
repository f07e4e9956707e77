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
Two more, from the simulator's account of the runs' own requests (paired in send order):
- runs: pooled over all the runs' requests, so over the runs' own time (the population
  is measured before them; a machine that changes speed in between moves every run);
- own: the run's own requests, not a 95 % target: it shows what the client's
  measurement adds to what the server did, not what a rerun would give.
Then "where the runs' means part from the truth" splits the runs' spread of the
simulator's per-request account (tests/support/interval_sources.py): the requests'
own standard error, the shift the requests of a run share (tau) and the coverage
ceiling it leaves one run's interval, the population's phase, the first request of a
run, the runs' means in order (lag-1: a drift in time), the same split over the
population's blocks of --requests (one level: no pause, scrape or new seed between
blocks), the most requests in flight and the model's step against the realised TPOT.

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

from tests.support.interval_sources import (  # noqa: E402
    first_minus_rest,
    most_in_flight,
    run_spread,
)
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


def server_by_run(
    records: list[dict[str, object]], path: Path
) -> tuple[list[dict[str, list[float]]], list[list[dict[str, object]]]] | None:
    """Each run's requests as the simulator accounted for them, paired with the client's
    rows in send order (one stream: the server numbers them in that order). None, with
    why printed, when the two do not pair (a failed request, a count that differs)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows.sort(key=lambda row: (int(row["level"]), int(row["request"])))
    if len(rows) != len(records) or not all(row["success"] for row in rows):
        print(f"runs not paired with the simulator's records: {len(rows)} client rows,"
              f" {len(records)} records, {sum(not r['success'] for r in rows)} failed")  # fmt: skip
        return None
    mismatched = sum(
        r["output_tokens"] != t["output_tokens"] for r, t in zip(rows, records, strict=True)
    )
    if mismatched:
        print(f"runs not paired with the simulator's records: {mismatched} output lengths differ")
        return None
    by_level: dict[int, list[dict[str, object]]] = {}
    for row, record in zip(rows, records, strict=True):
        by_level.setdefault(int(row["level"]), []).append(record)
    levels = [by_level[k] for k in sorted(by_level)]
    return [server_population(level) for level in levels], levels


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
    since = await last_number(url)
    started = time.monotonic()
    result = await run_bench(runs)
    print(f"{args.runs} runs of {args.requests} requests in {time.monotonic() - started:.0f} s")
    lags = lag1_by_metric(out / "runs.jsonl", args.requests)
    paired = server_by_run((await truth_since(url, since))[1:], out / "runs.jsonl")
    per_run, run_records = paired if paired is not None else ([], [])
    if per_run:  # the simulator's account pooled over the runs' own requests (their time)
        pooled = {m: [v for run in per_run for v in run[m]] for m in METRICS}
        truth["runs"] = {(m, f): figure_of(pooled[m], f) for m in METRICS for f in FIGURES}
    covered = {side: dict.fromkeys(truth["server"], 0) for side in (*truth, "own")}
    widths: dict[tuple[str, str], list[float]] = {key: [] for key in truth["server"]}
    points: dict[tuple[str, str], list[float]] = {key: [] for key in truth["server"]}
    opened = dict.fromkeys(truth["server"], 0)
    counted = 0
    for index, level in enumerate(result.levels):
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
                if per_run:  # the simulator's figure over this run's own requests
                    covered["own"][(m, f)] += interval.covers(figure_of(per_run[index][m], f))
    rows = []
    print(f"\n{counted} runs counted; 95 % intervals covering the truth (nominal 95 %)")
    print("  server: the simulator's account of the population; client: servedeck's of it;")
    print("  runs: the simulator's account pooled over all runs' requests (the runs' time);")
    print("  own: the simulator's account of the run's own requests (not a 95 % target:")
    print("  it shows what the client's measurement adds, not what a rerun would give)")
    print(f"{'figure':<14} {'runs':>5} {'server truth':>12} {'covered':>8} {'client truth':>12}"
          f" {'covered':>8} {'runs':>8} {'own':>5} {'median width':>12} {'runs sd/se':>10}"
          f" {'open above':>10}")  # fmt: skip
    for m in METRICS:
        for f in FIGURES:
            key = (m, f)
            width = statistics.median(widths[key]) if widths[key] else None
            mean_width = statistics.mean(widths[key]) if widths[key] else None
            spread = statistics.stdev(points[key]) if len(points[key]) > 1 else 0.0
            ratio = spread / (mean_width / 3.92) if mean_width else None
            share = {side: 100 * covered[side][key] / max(counted, 1) for side in covered}
            row = {
                "metric": m, "figure": f, "runs": counted,
                "server_truth": truth["server"][key], "coverage_server_pct": share["server"],
                "client_truth": truth["client"][key], "coverage_client_pct": share["client"],
                "runs_truth": truth["runs"][key] if per_run else None,
                "coverage_runs_pct": share["runs"] if per_run else None,
                "coverage_own_pct": share["own"] if per_run else None,
                "median_width": width, "runs_sd_over_se": ratio, "open_above": opened[key],
            }  # fmt: skip
            rows.append(row)
            pooled_runs = (
                f" {share['runs']:7.0f}% {share['own']:4.0f}%"
                if per_run
                else f" {'n/a':>8} {'n/a':>5}"
            )
            print(
                f"{m[:-3] + ' ' + f:<14} {counted:>5} {row['server_truth']:10.2f}ms"
                f" {share['server']:7.0f}% {row['client_truth']:10.2f}ms {share['client']:7.0f}%"
                + pooled_runs
                + (f" {'n/a (open)':>12} {'n/a':>10}" if width is None or ratio is None else
                   f" {width:10.2f}ms {ratio:10.2f}")
                + f" {opened[key]:>10}"
            )  # fmt: skip
    sources = report_sources(per_run, run_records, server, args.requests) if per_run else {}
    offset = {m: truth["client"][(m, "p50")] - truth["server"][(m, "p50")] for m in METRICS}
    print("\nclient minus server, p50: " + ", ".join(f"{m} {v:+.2f} ms" for m, v in offset.items()))
    print("lag-1 autocorrelation within runs (mean over runs): "
          + ", ".join(f"{m} {v:+.3f}" for m, v in lags.items()))  # fmt: skip
    if args.json:
        body = {
            "runs": args.runs, "requests": args.requests, "population": args.population,
            "seed": args.seed, "load_average": list(os.getloadavg()), "cpus": os.cpu_count(),
            "client_minus_server_p50_ms": offset, "lag1_autocorrelation": lags,
            "sources": sources,
            "statistics": rows,
        }  # fmt: skip
        Path(args.json).write_text(json.dumps(body, indent=2) + "\n")
        print(f"wrote {args.json}")


def report_sources(
    per_run: list[dict[str, list[float]]],
    records: list[list[dict[str, object]]],
    population: dict[str, list[float]],
    requests: int,
) -> dict[str, object]:
    """Print and return where the runs' figures part from the pooled truth (the
    simulator's account: tests/support/interval_sources.py says what each part is)."""
    found: dict[str, object] = {}
    print("\nwhere the runs' means part from the truth (the simulator's account, ms):")
    print(f"{'metric':<6} {'within se':>9} {'between sd':>10} {'shared tau':>10} {'ceiling':>8}"
          f" {'runs-pop mean':>13} {'runs-pop p50':>12} {'first-rest':>16} {'runs lag-1':>10}"
          f" {'pop blocks tau':>14}")  # fmt: skip
    for m in METRICS:
        runs = [run[m] for run in per_run]
        spread = run_spread(runs)
        # The control: the population is one level; its blocks of `requests` consecutive
        # requests have no pause, scrape or new seed between them, only time.
        values = population[m]
        blocks = run_spread([values[i : i + requests] for i in range(0, len(values), requests)])
        drift = lag1([statistics.fmean(run) for run in runs if run])
        first = first_minus_rest(runs)
        pooled = [v for run in runs for v in run]
        phase = {f: figure_of(pooled, f) - figure_of(population[m], f) for f in ("mean", "p50")}
        if spread is None:
            continue
        found[m] = {
            "within_se_ms": spread.within_ms, "between_sd_ms": spread.between_ms,
            "shared_tau_ms": spread.tau_ms, "ceiling_pct": 100 * spread.ceiling,
            "runs_minus_population_mean_ms": phase["mean"],
            "runs_minus_population_p50_ms": phase["p50"],
            "first_minus_rest_ms": first, "runs_means_lag1": drift,
            "population_blocks_tau_ms": None if blocks is None else blocks.tau_ms,
        }  # fmt: skip
        gap = "n/a" if first is None else f"{first[0]:+.3f}+-{1.96 * first[1]:.3f}"
        print(f"{m[:-3]:<6} {spread.within_ms:9.3f} {spread.between_ms:10.3f}"
              f" {spread.tau_ms:10.3f} {100 * spread.ceiling:7.0f}% {phase['mean']:+13.3f}"
              f" {phase['p50']:+12.3f} {gap:>16}"
              f" {'n/a' if drift is None else f'{drift:+.2f}':>10}"
              f" {'n/a' if blocks is None else f'{blocks.tau_ms:.3f}':>14}")  # fmt: skip
    in_flight = max((most_in_flight(run) for run in records), default=0)
    step_s, alpha = FAST_OPTIONS.decode_step_s or 0.0, FAST_OPTIONS.decode_alpha or 0.0
    step_ms = 1000 * step_s * (1 + alpha * max(in_flight - 1, 0))  # ServerSettings.step_s
    tpot = statistics.fmean(v for run in per_run for v in run["tpot_ms"])
    found["most_in_flight"] = in_flight
    found["model_step_ms"] = step_ms
    found["overshoot_ms"] = tpot - step_ms
    print(f"most requests in flight at once: {in_flight} (the decode batch is 1 at one stream);"
          f" the model's step at that batch {step_ms:.3f} ms, the runs' TPOT {tpot:.3f} ms:"
          f" {tpot - step_ms:+.3f} ms a step is the simulator's event loop")  # fmt: skip
    print("ceiling: the coverage of a pooled truth that a right-width interval over one run's"
          f" {requests} requests reaches when each run shifts by the shared tau")  # fmt: skip
    return found


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
