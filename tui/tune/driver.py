"""Running the experiment: each configuration started, followed, measured and undone.

For each configuration the Plan let through, in order of predicted load time: its
drop-in written (the restore marker first), leftovers ended through the killer, the
unit started through the restart guard, the load followed with the load tracker
(predicted vs measured), readiness awaited until the configuration's deadline, the
objective's benchmark run (a capacity search at the profile's SLO), the unit stopped.
A load that fails (OOM, invalid, killed) or misses its deadline records its phase and
failure line, and the experiment goes on. Whatever ends the run (the end, an error,
Ctrl-C, SIGTERM), `run_tune`'s `finally` removes the drop-in and puts the service back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import httpx

from tui.bench.capacity.driver import CapacityProcess
from tui.bench.capacity.search import CapacitySlo
from tui.bench.capacity.spec import CapacitySpec
from tui.bench.workload import BenchSpec
from tui.core.errors import ServedeckError
from tui.deck import Deck
from tui.ops.gpu_hints import deck_context, rereader
from tui.ops.restart_guard import guard_listing, guarded_action
from tui.procs.kill import kill_processes, leftovers
from tui.serving.load.tracker import LoadTracker
from tui.tune.dropin import (
    DropIn,
    clear_marker,
    config_argv,
    dropin_text,
    read_marker,
    unit_argv,
    write_marker,
)
from tui.tune.figures import capacity_words, figures, level_line
from tui.tune.preflight import PlannedConfig
from tui.tune.progress import TuneBoard
from tui.tune.space import TuneSpace

if TYPE_CHECKING:  # the recording module imports Outcome from here
    from tui.tune.record import TuneRecording

Say = Callable[[str], None]
FAILED_STATES = ("failed",)
POLL_S = 0.25


@dataclass(frozen=True, slots=True)
class Outcome:
    """One configuration's result: how its load ended and what the benchmark measured."""

    name: str
    key: str
    outcome: str  # served | failed | timeout | skipped | over budget | cancelled
    gpus: int
    layout: str
    phase: str | None = None  # where a failed load stopped
    failure_line: str | None = None
    reason: str = ""  # a skip's arithmetic
    kv_room_bytes_per_gpu: int | None = None
    predicted_load_s: float | None = None
    load_s: float | None = None
    single_stream_tok_s: float | None = None
    capacity_users: int | None = None
    # why a capacity search that ran proved no capacity (None: it proved one, or none ran)
    capacity_none_proved: str | None = None
    total_tok_s: float | None = None  # output tok/s at capacity
    per_user_tok_s: float | None = None  # each user's tok/s at capacity
    # The capacity's bracket: the first level above it that missed the SLO (None: unknown).
    capacity_users_above: float | None = None
    # 95 % intervals (tui.bench.uncertainty over the level's requests; None: not known)
    single_stream_tok_s_range: tuple[float, float] | None = None
    total_tok_s_range: tuple[float, float] | None = None

    @property
    def tok_per_gpu(self) -> float | None:
        return None if self.total_tok_s is None or not self.gpus else self.total_tok_s / self.gpus

    @property
    def tok_per_gpu_range(self) -> tuple[float, float] | None:
        if self.total_tok_s_range is None or not self.gpus:
            return None
        low, high = self.total_tok_s_range
        return low / self.gpus, high / self.gpus

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "tok_per_gpu": self.tok_per_gpu}


def skipped(item: PlannedConfig, outcome: str = "skipped") -> Outcome:
    return Outcome(
        item.config.name,
        item.config.key,
        outcome,
        item.gpus,
        item.layout.label,
        reason=item.reason if outcome == "skipped" else "",
        predicted_load_s=item.predicted_load_s,
    )


def slo_of(deck: Deck) -> CapacitySlo:
    slo = deck.profile.benchmark.slo
    return CapacitySlo(**{name: value or None for name, value in asdict(slo).items()})


async def clean_leftovers(deck: Deck, say: Say) -> None:
    """End what an earlier configuration left on the GPUs, through the killer (audited)."""
    listing = await guard_listing(deck)
    targets = leftovers(listing.processes)
    if not targets:
        return
    say(f"  ending {len(targets)} leftover(s): {', '.join(str(p.pid) for p in targets)}")
    report = await kill_processes(
        deck.host,
        targets,
        await deck_context(deck),
        read_only=deck.profile.read_only,
        reread=rereader(deck),  # what the kill freed, measured like every other kill's
        action="tune: kill leftovers",
    )
    if not report.all_ended:
        raise ServedeckError("leftovers survived the killer: see `servedeck procs`")


class _LoadWatch:
    """The unit's log fed to a LoadTracker while one configuration loads."""

    def __init__(self, deck: Deck) -> None:
        self.tracker = LoadTracker()
        self._batches = deck.read_log_batches(initial_lines=0, follow=True)
        self._task: asyncio.Task[None] | None = None

    async def _follow(self) -> None:
        if self._batches is None:
            return
        async for batch in self._batches:
            self.tracker.feed_many(batch)

    def __enter__(self) -> _LoadWatch:
        self._task = asyncio.ensure_future(self._follow())
        return self

    def __exit__(self, *_: object) -> None:
        if self._task is not None:
            self._task.cancel()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._batches is not None:
            with contextlib.suppress(Exception):
                await self._batches.aclose()  # type: ignore[attr-defined]

    def failed_phase(self) -> tuple[str | None, str | None]:
        """(the loading phase the load was in, its failure line) as the log tells them."""
        progress = self.tracker.snapshot()
        phases = [span.phase for span in progress.timeline if span.phase not in ("failed",)]
        return (phases[-1] if phases else progress.phase), progress.failure_line


async def _ready(client: httpx.AsyncClient, base_url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return (await client.get(f"{base_url}/health")).status_code == 200
    return False


async def _load(
    deck: Deck,
    item: PlannedConfig,
    deadline_s: float,
    say: Say,
    recording: TuneRecording | None = None,
    argv: list[str] | None = None,
    board: TuneBoard | None = None,
) -> tuple[str, float, str | None, str | None]:
    """Start and follow one load: (served|failed|timeout, seconds, phase, failure line)."""
    service = deck.service()
    assert service is not None
    watch = _LoadWatch(deck)
    started = time.monotonic()
    try:
        with watch:
            await asyncio.sleep(0.2)  # the follower opens the log before the first line
            await guarded_action(deck, "start", confirmed=True)
            if board is not None:
                board.state(item.config.name, "loading")
            if recording is not None:
                pid = (await service.state()).main_pid
                recording.exec(pid, argv or [], dict(item.config.env))
            base_url = await deck.reachable_base_url()
            async with httpx.AsyncClient(timeout=2.0) as client:
                while (elapsed := time.monotonic() - started) < deadline_s:
                    if board is not None:
                        board.loading(item.config.name, watch.tracker.snapshot())
                    if recording is not None:
                        recording.progress(watch.tracker.snapshot())
                    state = await service.state()
                    if state.active_state in FAILED_STATES or (
                        state.active_state == "inactive" and elapsed > 2.0
                    ):
                        await asyncio.sleep(0.5)  # the last lines of the log
                        phase, line = watch.failed_phase()
                        if recording is not None:
                            recording.progress(watch.tracker.snapshot())
                        return "failed", elapsed, phase, line or f"unit {state.active_state}"
                    if state.is_active and await _ready(client, base_url):
                        if recording is not None:
                            recording.progress(watch.tracker.snapshot())
                            recording.ready([deck.profile.model.name or ""])
                        return "served", elapsed, None, None
                    await asyncio.sleep(POLL_S)
            phase, _ = watch.failed_phase()
            say(f"  deadline: {deadline_s:g} s passed in phase {phase}: stopping the load")
            return "timeout", time.monotonic() - started, phase, f"not ready in {deadline_s:g} s"
    finally:
        await watch.close()


async def measure(deck: Deck, space: TuneSpace, say: Say) -> dict[str, Any] | None:
    """The objective's benchmark: a capacity search at the SLO (single stream: one level)."""
    bench = BenchSpec(
        base_url=await deck.reachable_base_url(),
        input_tokens=space.input_tokens,
        output_tokens=space.output_tokens,
        warmup_requests=0,
    )
    single = space.objective == "single_stream"
    spec = CapacitySpec(bench, slo=slo_of(deck), rounds=2, max_levels=1 if single else 8)
    if single:  # its speed is the figure: a level is not run again to decide a p99
        spec = replace(spec, max_level_requests=0)
    process = CapacityProcess(spec)
    async for event in process.events():
        if event.get("event") == "level":
            say(f"  {level_line(event.get('level') or {})}")
    return process.result


async def run_config(
    deck: Deck,
    space: TuneSpace,
    item: PlannedConfig,
    base_argv: list[str],
    drop: DropIn,
    say: Say,
    recording: TuneRecording | None = None,
    board: TuneBoard | None = None,
) -> Outcome:
    """One configuration from drop-in to stop; a failed load is an outcome, not an error."""
    config = item.config
    if board is not None:
        board.state(config.name, "starting", "drop-in, leftovers, guarded start")
    argv = config_argv(base_argv, config)
    await drop.write(dropin_text(config, argv))
    await clean_leftovers(deck, say)
    kind, load_s, phase, line = await _load(
        deck, item, space.deadline_s, say, recording, argv, board
    )
    measured: dict[str, Any] = {}
    if kind == "served":
        predicted = "unknown" if item.predicted_load_s is None else f"{item.predicted_load_s:.0f} s"
        say(f"  ready after {load_s:.0f} s (predicted {predicted})")
        if board is not None:
            board.state(config.name, "benchmarking", f"ready after {load_s:.0f} s")
        try:
            result = await measure(deck, space, say)
            measured = figures(result)
            if result and recording is not None:
                recording.capacity(result)
        except ServedeckError as error:
            say(f"  benchmark failed: {error}")
    else:
        say(f"  {kind} at {phase}: {line}")
    if board is not None:
        board.state(config.name, *_ended(kind, load_s, phase, line, measured))
    service = deck.service()
    assert service is not None
    await service.stop(confirmed=True)
    if recording is not None:
        recording.stopped()
    return Outcome(
        config.name,
        config.key,
        kind,
        item.gpus,
        item.layout.label,
        phase=phase,
        failure_line=line,
        kv_room_bytes_per_gpu=item.kv_room_bytes_per_gpu,
        predicted_load_s=item.predicted_load_s,
        load_s=load_s if kind == "served" else None,
        **measured,
    )


def _ended(
    kind: str, load_s: float, phase: str | None, line: str | None, measured: dict[str, Any]
) -> tuple[str, str]:
    """The board's end state of a configuration, and what to say of it."""
    if kind != "served":
        return "failed", f"{kind} at {phase or '?'}: {line}"
    single = measured.get("single_stream_tok_s")
    return "done", (
        f"loaded in {load_s:.0f} s; 1-stream "
        + ("unknown" if single is None else f"{single:.1f} tok/s")
        + f"; capacity {capacity_words(measured)}"
    )


async def restore(deck: Deck, drop: DropIn, was_active: bool, say: Say) -> None:
    """The drop-in gone, the unit reloaded, the service as it was before the tune."""
    service = deck.service()
    assert service is not None
    with contextlib.suppress(ServedeckError):
        if (await service.state()).is_active:
            await service.stop(confirmed=True)
    await drop.remove()
    if was_active:
        await clean_leftovers(deck, say)
        await guarded_action(deck, "start", confirmed=True)
    clear_marker()
    say("unit restored: drop-in removed" + (", service started as before" if was_active else ""))


async def run_tune(
    deck: Deck,
    space: TuneSpace,
    planned: tuple[PlannedConfig, ...],
    say: Say = print,
    done: dict[str, Outcome] | None = None,
    keep: Callable[[Outcome], None] = lambda _: None,
    recording: TuneRecording | None = None,
    board: TuneBoard | None = None,
) -> list[Outcome]:
    """Every planned configuration in order, within the budget; the unit restored at the end.

    `done` holds outcomes already measured (resume): those configurations are not run.
    `recording` (the profile's flight recording) gets each start as a Deployment attempt;
    `board` (the console's Tune view) each configuration's state.
    """
    service = deck.service()
    if service is None:
        raise ServedeckError(f"profile {deck.profile.name} names no unit: nothing to tune")
    base_argv = unit_argv(await deck.unit_file())
    drop = DropIn(deck, say)
    elsewhere = read_marker()
    if elsewhere is not None and elsewhere.host != deck.host_label:
        # One marker per data dir: overwriting it would lose what that host needs undone.
        raise ServedeckError(
            f"a tune on {elsewhere.host} left {elsewhere.dropin_path}: "
            "run `servedeck tune --restore` on that host's profile first"
        )
    was_active = (await service.state()).is_active
    write_marker(drop.marker(was_active))
    outcomes: list[Outcome] = []
    begun = time.monotonic()
    try:
        if was_active:
            say("stopping the service as it runs now (it is started again at the end)")
            await service.stop(confirmed=True)
        for item in planned:
            previous = (done or {}).get(item.config.key)
            if previous is not None:
                say(f"{item.config.name}: measured before (resume)")
                if board is not None:
                    board.state(item.config.name, "done", "measured before (resume)")
                outcomes.append(previous)
                continue
            if not item.runnable:
                outcomes.append(skipped(item))
                continue
            left = space.budget_s - (time.monotonic() - begun)
            if left < (item.predicted_load_s or 0.0) or left <= 0:
                say(f"{item.config.name}: over budget ({max(left, 0):.0f} s left)")
                if board is not None:
                    board.state(
                        item.config.name, "skipped", f"over budget ({max(left, 0):.0f} s left)"
                    )
                outcomes.append(skipped(item, "over budget"))
                continue
            say(f"{item.config.name}: {item.layout.label}")
            outcome = await run_config(deck, space, item, base_argv, drop, say, recording, board)
            outcomes.append(outcome)
            keep(outcome)
        if recording is not None:
            recording.finished(outcomes, space.objective)
    finally:
        await asyncio.shield(restore(deck, drop, was_active, say))
    return outcomes
