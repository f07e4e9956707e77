"""The benchmark process: `python -m tui.bench.runner` reads a BenchSpec (JSON) on stdin
and writes JSON-line events on stdout.

It runs apart from the console so UI rendering can never inflate TTFT or ITL.
Events, one JSON object per line, each with an "event" key:
  start     {model, engine_version, levels, prompt_method, transport, processes}
  progress  {level, concurrency, request_rate, done, failed, total, tokens, tok_s, elapsed_s}
  level     {level: LevelResult as a dict}
  result    {result: BenchResult as a dict}  (always last on success; `partial` when cancelled)
  error     {message}                        (then exit status 1)
SIGINT or SIGTERM cancels: in-flight streams end, finished requests are kept
and the result is marked partial. With `--worker` it runs one shard of one
level for a parent runner (several processes when one core is not enough)
and emits `outcome` events instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, replace
from datetime import datetime
from typing import Any

import httpx

from tui.bench.adapters import adapter_levels
from tui.bench.chat_loop import PrefixIntent, chat_questions, run_conversations
from tui.bench.client import make_client
from tui.bench.client_load import ClientMeter, ClientSample
from tui.bench.loadgen import LevelRun, run_level
from tui.bench.metrics import Slos, summarize_level
from tui.bench.model import BenchResult, LevelResult, RequestOutcome
from tui.bench.process_io import (
    WarmupStalled,
    api_key_for,
    describe,
    discover,
    emit,
    install_cancel,
    wall_deadline,
)
from tui.bench.prompt_fit import PromptPlan, approximate, plan_prompts
from tui.bench.requests_file import append_requests, request_rows
from tui.bench.server_view import scrape, server_delta
from tui.bench.shards import run_shard, sharded_level
from tui.bench.trace import load_trace, replay, trace_prompts
from tui.bench.workload import BenchSpec, api_url, endpoint_path, words_for_tokens
from tui.bench.workloads import intended_prefix_hit_rate, reset_prefix_cache, workload_prompts

STREAMS_PER_PROCESS = 256


def processes_for(spec: BenchSpec, concurrency: int) -> int:
    if spec.processes > 0:
        return min(spec.processes, max(1, concurrency))
    spare = max(1, (os.cpu_count() or 2) - 1)
    return max(1, min(spare, math.ceil(concurrency / STREAMS_PER_PROCESS)))


async def _progress_loop(
    index: int,
    concurrency: int,
    rate: float | None,
    total: int,
    run: LevelRun,
    worker_tokens: dict[int, int],
    interval_s: float,
) -> None:
    started = time.perf_counter()
    last_tokens, last_at = 0, started
    while True:
        await asyncio.sleep(interval_s)
        now = time.perf_counter()
        tokens = run.tokens_so_far() + sum(worker_tokens.values())
        tok_s = (tokens - last_tokens) / (now - last_at) if now > last_at else 0.0
        last_tokens, last_at = tokens, now
        emit(
            "progress",
            level=index,
            concurrency=concurrency,
            request_rate=rate,
            done=len(run.outcomes),
            failed=run.failed,
            total=total,
            tokens=tokens,
            tok_s=max(tok_s, 0.0),
            elapsed_s=now - started,
        )


async def _plan_unless_cancelled(
    control: httpx.AsyncClient, spec: BenchSpec, cancel: asyncio.Event
) -> PromptPlan:
    """Calibrate the prompts, unless the run is cancelled meanwhile (a cancel or the wall
    deadline): a hung server would hold a calibration probe for its whole read timeout."""
    planning = asyncio.ensure_future(plan_prompts(control, spec))
    cancelled = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({planning, cancelled}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        cancelled.cancel()
    if planning.done():
        return planning.result()
    planning.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await planning
    return approximate("the run was stopped while the prompts were calibrated")


async def run_spec(spec: BenchSpec, cancel: asyncio.Event) -> BenchResult:
    """The whole run: discovery, prompts, warm-up, every level, server view."""
    api_key = api_key_for(spec)
    control = make_client(
        max_connections=4,
        read_timeout_s=30.0,
        connect_timeout_s=spec.connect_timeout_s,
        transport="httpx",
        api_key=api_key,
    )
    started_at = datetime.now().astimezone().isoformat(timespec="seconds")
    async with control:
        model, version = await discover(control, spec)
        spec = replace(spec, model=model)
        context = replace(spec.context, model=model, base_url=spec.base_url)
        if version:
            context = replace(context, engine_version=version)
        plan: PromptPlan | None = None
        if spec.workload == "random":
            plan = await _plan_unless_cancelled(control, spec, cancel)
            words, prompt_method = plan.words_for(spec.input_tokens), plan.label
        else:
            words, prompt_method = await words_for_tokens(control, spec)
        reset = (
            await reset_prefix_cache(control, spec.base_url) if spec.workload != "random" else ""
        )
        levels = spec.levels()
        emit(
            "start",
            model=model,
            engine_version=version,
            levels=[{"concurrency": c, "request_rate": r} for c, r in levels],
            prompt_method=prompt_method,
            transport=spec.transport,
        )
        url = api_url(spec.base_url, endpoint_path(spec.endpoint))
        metrics_url = api_url(spec.base_url, "/metrics")
        top = max(c for c, _ in levels) if levels else 1
        results: list[LevelResult] = []
        intent = PrefixIntent()
        used_processes = 1
        async with make_client(
            max_connections=top,
            read_timeout_s=spec.read_timeout_s,
            connect_timeout_s=spec.connect_timeout_s,
            transport=spec.transport,
            api_key=api_key,
        ) as client:
            warm = workload_prompts(
                replace(spec, workload="random"),
                words,
                spec.warmup_requests,
                spec.seed + 7919,
                plan,
            )
            for prompt in warm:
                if cancel.is_set():
                    break
                # Warm-up is sent and awaited, never measured; progress shows the wait.
                warm_run = LevelRun()
                waiting = asyncio.create_task(
                    _progress_loop(-1, 1, None, 1, warm_run, {}, spec.progress_interval_s)
                )
                try:
                    await run_level(
                        client, url, spec, [prompt], concurrency=1, rate=None, seed=0,
                        cancel=cancel, run=warm_run,
                    )  # fmt: skip
                finally:
                    waiting.cancel()
                _check_warmup(warm_run)
            for index, (concurrency, rate) in enumerate(levels):
                if cancel.is_set():
                    break
                total = spec.requests_for(concurrency) if rate is None else spec.requests_for(1)
                if rate is not None and spec.num_requests <= 0:
                    total = max(8, math.ceil(rate * 30))
                # A conversation needs its own answers back: chat runs in this process.
                in_process = spec.workload in ("chat", "trace")
                processes = 1 if in_process else processes_for(spec, concurrency)
                used_processes = max(used_processes, processes)
                seed = spec.seed + 1000 * (index + 1)
                before = await scrape(control, metrics_url) if spec.scrape_metrics else None
                run = LevelRun()
                worker_tokens: dict[int, int] = {}
                samples: list[ClientSample] = []
                meter = ClientMeter()
                meter.start()
                progress = asyncio.create_task(
                    _progress_loop(
                        index, concurrency, rate, total, run, worker_tokens,
                        spec.progress_interval_s,
                    )
                )  # fmt: skip
                try:
                    if spec.workload == "trace":
                        trace = load_trace(spec.trace_path)
                        trace = trace[: spec.num_requests] if spec.num_requests > 0 else trace
                        total = len(trace)
                        ratio = words / max(spec.input_tokens, 1)
                        prompts, intended = trace_prompts(trace, ratio, seed)
                        intent.prompt_tokens += intended.prompt_tokens
                        intent.reusable_tokens += intended.reusable_tokens
                        await replay(
                            client, url, spec, trace, prompts, concurrency=concurrency,
                            cancel=cancel, run=run,
                        )  # fmt: skip
                    elif spec.workload == "chat":
                        turns = max(spec.chat_turns, 1)
                        talks = chat_questions(words, math.ceil(total / turns), turns, seed)
                        await run_conversations(
                            client, api_url(spec.base_url, endpoint_path("chat")), spec, talks,
                            concurrency=concurrency, cancel=cancel, run=run, intent=intent,
                        )  # fmt: skip
                    elif processes == 1:
                        prompts = workload_prompts(spec, words, total, seed, plan)
                        await run_level(
                            client, url, spec, prompts, concurrency=concurrency, rate=rate,
                            seed=seed, cancel=cancel, run=run,
                        )  # fmt: skip
                    else:
                        await sharded_level(
                            spec, words, plan, processes=processes, concurrency=concurrency,
                            rate=rate, num_requests=total, seed=seed, cancel=cancel,
                            run=run, worker_tokens=worker_tokens, samples=samples,
                        )  # fmt: skip
                finally:
                    progress.cancel()
                    samples.append(await meter.stop())
                after = await scrape(control, metrics_url) if spec.scrape_metrics else None
                level = summarize_level(
                    run.outcomes,
                    concurrency=concurrency,
                    request_rate=rate,
                    burstiness=spec.burstiness,
                    num_requests=total,
                    duration_s=_duration_s(run.outcomes),
                    partial=run.partial,
                    cancelled=run.cancelled,
                    slos=Slos(
                        spec.slos.ttft_ms, spec.slos.tpot_ms, spec.slos.e2el_ms,
                        spec.slos.attainment,
                    ),
                    server=server_delta(before, after),
                    percentiles=spec.percentiles,
                    seed=seed,
                    client_samples=samples,
                )  # fmt: skip
                if spec.lora:
                    adapters = adapter_levels(
                        run.outcomes, spec.lora, level.duration_s, spec.percentiles
                    )
                    level = replace(level, adapters=adapters)
                if spec.requests_path:
                    rows = request_rows(index, concurrency, rate, run.outcomes)
                    append_requests(spec.requests_path, rows, first=not results)
                results.append(level)
                emit("level", level=level_to_dict(level))
    partial = cancel.is_set() or any(level.partial for level in results)
    partial = partial or len(results) < len(spec.levels())
    return BenchResult(
        run_id=uuid.uuid4().hex[:12],
        started_at=started_at,
        preset=spec.preset,
        endpoint=spec.endpoint,
        input_tokens=spec.input_tokens,
        output_tokens=spec.output_tokens,
        temperature=spec.temperature,
        ignore_eos=spec.ignore_eos,
        context=context,
        levels=tuple(results),
        partial=partial,
        client={
            "transport": spec.transport,
            "processes": used_processes,
            "prompt_method": prompt_method,
            "warmup_requests": spec.warmup_requests,
            "read_timeout_s": spec.read_timeout_s,
            **({"lengths": spec.lengths().describe()} if spec.lengths().varies else {}),
            **_workload_notes(spec, results, reset, intent),
        },
    )


def _check_warmup(run: LevelRun) -> None:
    """A warm-up that hit a deadline ends the run at once, rather than every level timing out."""
    for outcome in run.outcomes:
        error = outcome.error or ""
        if not outcome.success and ("deadline" in error or error.startswith("no ")):
            raise WarmupStalled(f"warm-up request failed: {error}; not starting the run")


def _workload_notes(
    spec: BenchSpec, levels: list[LevelResult], reset: str, intent: PrefixIntent
) -> dict[str, Any]:
    """The workload, its intended prefix-cache hit rate and the measured one (0..1)."""
    if spec.workload == "random":
        return {}
    requests = sum(level.completed + level.failed for level in levels)
    views = [level.server for level in levels if level.server is not None]
    queries = sum(view.prefix_queries for view in views)
    return {
        "workload": spec.workload,
        "prefix_groups": spec.prefix_groups,
        "prefix_tokens": spec.prefix_tokens,
        "prefix_cache_reset": reset or "not offered by the server",
        "intended_prefix_hit_rate": (
            intent.rate
            if spec.workload in ("chat", "trace")
            else intended_prefix_hit_rate(spec, requests)
        ),
        "measured_prefix_hit_rate": (
            sum(view.prefix_hits for view in views) / queries if queries else None
        ),
    }


def level_to_dict(level: LevelResult) -> dict[str, Any]:
    return asdict(level)


def _duration_s(outcomes: list[RequestOutcome]) -> float:
    """First dispatch to last completion."""
    if not outcomes:
        return 0.0
    return max(o.end_s for o in outcomes) - min(o.start_s for o in outcomes)


async def _main(argv: list[str], read_stdin: Callable[[], str]) -> int:
    cancel = asyncio.Event()
    install_cancel(cancel)
    try:
        job = json.loads(read_stdin())
    except ValueError as error:
        emit("error", message=f"bad spec on stdin: {error}")
        return 1
    if "--worker" in argv:
        await run_shard(job, cancel)
        return 0
    try:
        spec = BenchSpec.from_dict(job)
        watchdog = asyncio.create_task(wall_deadline(spec.run_timeout_s, cancel))
        try:
            result = await run_spec(spec, cancel)
        finally:
            watchdog.cancel()
    except (httpx.HTTPError, KeyError, IndexError, ValueError, TypeError, OSError) as error:
        emit("error", message=describe(error))
        return 1
    if watchdog.done() and not watchdog.cancelled() and watchdog.result():
        result = replace(
            result,
            client={**result.client, "stopped": f"run wall deadline of {spec.run_timeout_s:g} s"},
        )
    emit("result", result=result.to_dict())
    return 0


def main() -> int:
    return asyncio.run(_main(sys.argv[1:], sys.stdin.read))


if __name__ == "__main__":
    sys.exit(main())
