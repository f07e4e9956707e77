"""Log pane ingest benchmark: a flood of vLLM-format lines into a headless app.

Prints lines/s ingested (until every line is drawn into the Log), event-loop lag
p50/p99 during the flood (a 10 ms timer measuring how late it fires), and RSS
before and after. Targets: >= 100,000 lines/s, lag p99 <= 50 ms, memory bounded
by the buffer size.

    python tests/perf/log_ingest.py [--lines 500000] [--batch 2000] [--max-lines 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from textual.app import App, ComposeResult

from tui.logs.classify import LevelClassifier
from tui.logs.line import LogLine
from widgets.log_pane import LogPane


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * resource.getpagesize() / 2**20


_CLASSIFIER = LevelClassifier()


def make_lines(start: int, count: int) -> list[LogLine]:
    """vLLM-format lines, classified as a follower would (that cost is measured apart)."""
    classifier = _CLASSIFIER
    templates = (
        "(APIServer pid=2000) INFO 11-29 10:{m:02d}:{s:02d} [loggers.py:335] Engine 000: Avg "
        "prompt throughput: 1200.5 tokens/s, Avg generation throughput: 82.1 tokens/s, Running: "
        "{i} reqs, Waiting: 0 reqs, GPU KV cache usage: 12.5%, Prefix cache hit rate: 0.0%",
        '(APIServer pid=2000) INFO:     127.0.0.1:{i} - "POST /v1/completions HTTP/1.1" 200 OK',
        "(Worker_TP3 pid=2104) WARNING 11-29 10:{m:02d}:{s:02d} [utils.py:1] slow step {i}",
    )
    out = []
    for i in range(start, start + count):
        text = templates[i % 3].format(m=(i // 60) % 60, s=i % 60, i=i)
        out.append(LogLine(text=text, timestamp_s=1.8e9 + i, level=classifier.classify(text)))
    return out


class IngestApp(App[None]):
    def __init__(self, max_lines: int) -> None:
        super().__init__()
        self.max_lines = max_lines

    def compose(self) -> ComposeResult:
        yield LogPane(max_lines=self.max_lines, flush_interval_s=0.1)


async def run(total: int, batch: int, max_lines: int, flush_each: bool) -> dict[str, float]:
    made = time.perf_counter()
    lines = make_lines(0, total)
    classify_us = (time.perf_counter() - made) / total * 1e6
    app = IngestApp(max_lines)
    lags: list[float] = []
    async with app.run_test(size=(160, 50)) as pilot:
        pane = app.query_one(LogPane)
        await pilot.pause()
        rss_before = rss_mb()  # the input lines are already in memory here
        flooding = True

        async def lag_probe() -> None:
            interval = 0.01
            while flooding:
                start = time.perf_counter()
                await asyncio.sleep(interval)
                lags.append(time.perf_counter() - start - interval)

        probe = asyncio.create_task(lag_probe())
        started = time.perf_counter()
        for offset in range(0, total, batch):
            pane.add_lines(lines[offset : offset + batch])
            if flush_each:
                pane.flush()  # worst case: every line goes through Log.write_lines
            await asyncio.sleep(0)  # a producer that yields between batches, like a follower
        while pane._pending:  # wait until the last batch is written into the Log
            await asyncio.sleep(0.005)
        elapsed = time.perf_counter() - started
        flooding = False
        await probe
        await pilot.pause()
        rss_after = rss_mb()
        shown = pane.log_view.line_count
    lags.sort()
    return {
        "lines": total,
        "make_and_classify_us_per_line": classify_us,
        "mode": "flush-each-batch" if flush_each else "flush-10Hz",
        "seconds": elapsed,
        "lines_per_s": total / elapsed,
        "lag_p50_ms": statistics.median(lags) * 1000 if lags else 0.0,
        "lag_p99_ms": lags[int(0.99 * (len(lags) - 1))] * 1000 if lags else 0.0,
        "lag_max_ms": lags[-1] * 1000 if lags else 0.0,
        "rss_before_mb": rss_before,
        "rss_after_mb": rss_after,
        "buffer_lines": len(pane.buffer),
        "log_lines": shown,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=500_000)
    parser.add_argument("--batch", type=int, default=2_000)
    parser.add_argument("--max-lines", type=int, default=50_000)
    parser.add_argument(
        "--flush-each", action="store_true", help="write every batch to the Log immediately"
    )
    args = parser.parse_args()
    result = asyncio.run(run(args.lines, args.batch, args.max_lines, args.flush_each))
    for key, value in result.items():
        shown = (
            f"{value:,.1f}"
            if isinstance(value, float)
            else f"{value:,}"
            if isinstance(value, int)
            else value
        )
        print(f"{key:>30}: {shown}")


if __name__ == "__main__":
    main()
