"""The Benchmark pane as a pure view: fed frozen results, checked with Pilot and a snapshot."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import DataTable, Static

from tui.bench.driver import BenchProgress, BenchStarted
from tui.bench.metrics import summarize_level
from tui.bench.model import BenchResult, RequestOutcome, RunContext
from widgets.bench_view import BenchView


def _level(concurrency: int, ttft_s: float, tpot_s: float, *, failed: int = 0):  # type: ignore[no-untyped-def]
    tokens = 256
    outcomes = [
        RequestOutcome(
            success=True,
            ttft_s=ttft_s * (1 + i / 50),
            latency_s=ttft_s + tpot_s * (tokens - 1),
            itl_s=[tpot_s] * (tokens - 1),
            output_tokens=tokens,
            chunks=tokens,
            prompt_tokens=1024,
            usage_seen=True,
        )
        for i in range(4 * concurrency)
    ]
    outcomes += [RequestOutcome(error="HTTP 503: overloaded") for _ in range(failed)]
    duration = (ttft_s + tpot_s * (tokens - 1)) * 4
    return summarize_level(
        outcomes, concurrency=concurrency, request_rate=None, burstiness=1.0,
        num_requests=len(outcomes), duration_s=duration,
    )  # fmt: skip


def _run(run_id: str, tp: int, ep: bool, speed: float, when: str) -> BenchResult:
    levels = tuple(
        _level(c, 0.12 * (1 + c / 16), (1 / speed) * (1 + c / 40), failed=(c == 64))
        for c in (1, 8, 32, 64)
    )
    return BenchResult(
        run_id=run_id, started_at=when, preset="sweep", endpoint="completions",
        input_tokens=1024, output_tokens=256, temperature=0.0, ignore_eos=True,
        context=RunContext(profile="kimi", host="root@10.10.0.21", model="Kimi-K2.5-INT4",
                           gpus="0-7", tp=tp, ep=ep, config_hash=f"{run_id}0123456789"),
        levels=levels,
    )  # fmt: skip


RUNS = [
    _run("c", 8, True, 82.0, "2026-11-29T16:40:00+00:00"),
    _run("b", 8, False, 78.0, "2026-11-28T11:05:00+00:00"),
    _run("a", 4, False, 64.0, "2026-11-27T09:30:00+00:00"),
]


class BenchViewApp(App[None]):
    def compose(self) -> ComposeResult:
        yield BenchView()

    def on_mount(self) -> None:
        view = self.query_one(BenchView)
        view.show_result(RUNS[0])
        view.show_history(RUNS)


async def test_progress_then_levels_then_history() -> None:
    app = BenchViewApp()
    async with app.run_test(size=(120, 50)) as pilot:
        view = app.query_one(BenchView)
        view.show_started(BenchStarted("Kimi-K2.5-INT4", "0.32.0", ((1, None),), "/tokenize", ""))
        view.show_progress(BenchProgress(0, 8, None, 12, 2, 32, 3072, 5321.0, 4.2))
        await pilot.pause()
        progress = str(app.query_one("#bench-progress", Static).render())
        assert "12/32 requests" in progress and "5,321 tok/s" in progress and "2 errors" in progress
        levels = app.query_one("#bench-levels", DataTable)
        assert levels.row_count == 0  # show_started cleared the last run
        view.show_level(RUNS[0].levels[0])
        await pilot.pause()
        assert levels.row_count == 1
        view.show_result(RUNS[1])
        await pilot.pause()
        assert levels.row_count == 4
        row = levels.get_row_at(3)
        assert row[0] == "c=64" and str(row[2]) == "1"
        history = app.query_one("#bench-history", DataTable)
        assert history.row_count == 3
        newest = history.get_row_at(0)
        assert newest[4] == "TP8+EP" and newest[6] == f"{RUNS[0].single_stream_tok_s:,.1f}"


async def test_error_line_replaces_progress() -> None:
    app = BenchViewApp()
    async with app.run_test(size=(100, 40)) as pilot:
        app.query_one(BenchView).show_error("benchmark: connection refused")
        await pilot.pause()
        assert "connection refused" in str(app.query_one("#bench-progress", Static).render())


def test_bench_view_snapshot(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(BenchViewApp(), terminal_size=(120, 48))


async def test_a_cancelled_level_and_run_show_n_a_never_zero() -> None:
    from dataclasses import replace

    from tui.bench.model import LatencyStats

    empty = replace(
        RUNS[0].levels[0], completed=0, partial=True, output_throughput=0.0,
        request_throughput=0.0, ttft=LatencyStats(), tpot=LatencyStats(), itl=LatencyStats(),
    )  # fmt: skip
    cancelled = replace(RUNS[0], run_id="gone", levels=(empty,), partial=True)
    app = BenchViewApp()
    async with app.run_test(size=(120, 50)) as pilot:
        view = app.query_one(BenchView)
        view.show_result(cancelled)
        view.show_history([cancelled])
        await pilot.pause()
        row = [str(cell) for cell in app.query_one("#bench-levels", DataTable).get_row_at(0)]
        assert row[3:] == ["n/a"] * 6, row  # "0.0" where nothing was measured before
        history = [str(cell) for cell in app.query_one("#bench-history", DataTable).get_row_at(0)]
        assert history[1].endswith("cancelled") and history[6:] == ["n/a", "n/a", "n/a"], history


async def test_levels_fit_80_columns_and_the_highlighted_level_has_its_whole_report() -> None:
    app = BenchViewApp()
    async with app.run_test(size=(80, 60)) as pilot:
        await pilot.pause()
        levels = app.query_one("#bench-levels", DataTable)
        assert levels.virtual_size.width <= levels.scrollable_content_region.width
        detail = app.query_one("#bench-detail", Static)
        assert str(detail.render()).splitlines()[0].startswith("c=64")  # the newest level
        levels.focus()
        levels.move_cursor(row=1)
        await pilot.pause()
        text = str(detail.render())
        lines = text.splitlines()
        assert lines[0].split() == ["c=8", "mean", "median", "p90", "p95", "p99"]
        assert [line.split()[0] for line in lines[1:5]] == ["TTFT", "TPOT", "ITL", "E2EL"]
        rates = next(line for line in lines if line.startswith("  tok/s "))
        assert "input" in rates and "total" in rates
        intervals = next(i for i, line in enumerate(lines) if line.startswith("  tok/s/u mean "))
        # the intervals follow; a percentile of too few requests is said open above, last
        assert all("upper bound unknown" in line for line in lines[intervals + 1 :]), lines
        assert all(len(line) <= 78 for line in lines)  # inside the pane's padding
