"""A scripted night on the simulator, recorded headless: load, serving, a crash the unit
restarts, a stop that leaves leftovers, their kill by the operator; with alerts and a webhook.

Every part is real: the simulator's server and worker processes, its HTTP API, the
killer (pidfd, audited), the recorder's SQLite file and a webhook HTTP server process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.record_support import count, wait_for
from tests.support.sim_fixtures import FAST_OPTIONS
from tests.support.summary_helpers import demo_deck
from tui.alerts.monitor import AlertMonitor
from tui.core.alert_rules import AlertingConfig, AlertRule, WebhookConfig
from tui.ops.gpu_hints import deck_context, gpu_snapshot
from tui.procs import kill_processes, leftovers, list_gpu_processes
from tui.record.feed import RecordFeed
from tui.record.headless import Cadence, HeadlessRecorder
from tui.record.query import RecordingReader
from tui.record.where import recording_path
from tui.record.writer import Recorder
from tui.sim.box import SimBox
from tui.summary.recorded import recorded_history
from tui.summary.recorded_render import deployment_attempts_lines, recorded_incidents_lines

FAST = Cadence(gpu_s=0.5, service_s=0.5, metrics_s=1.0, readiness_s=0.5, procs_s=1.0, files_s=0.5)
RULES = (
    AlertRule("unit-failed", "unit.failed", ">=", 1, 0, "critical"),
    AlertRule("leftovers", "procs.leftovers_while_inactive", ">=", 1, 0, "warning"),
)


@pytest.fixture
def hook(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    log = tmp_path / "hook.jsonl"
    server = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).parents[1] / "support" / "webhook_server.py"),
            str(log),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    port = int(server.stdout.readline())
    try:
        yield f"http://127.0.0.1:{port}/hook", log
    finally:
        server.kill()
        server.wait()


class BackgroundRecording:
    """The headless recorder on its own event loop in a thread, as `servedeck record` runs it."""

    def __init__(self, run: Callable[[asyncio.Event], object]) -> None:
        self._run = run
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await self._run(self._stop)  # type: ignore[misc]

        asyncio.run(main())

    def stop(self) -> None:
        wait_for(lambda: self._loop is not None and self._stop is not None)
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)


def _texts(db: Path) -> list[str]:
    with RecordingReader(db) as reader:
        return [event.text for event in reader.events()]


def _has(db: Path, prefix: str, at_least: int = 1) -> bool:
    return sum(text.startswith(prefix) for text in _texts(db)) >= at_least


def _has_after(db: Path, prefix: str, anchor: str, nth: int, at_least: int) -> bool:
    """At least `at_least` events starting with prefix after the nth starting with anchor."""
    texts = _texts(db)
    anchors = [i for i, text in enumerate(texts) if text.startswith(anchor)]
    if len(anchors) < nth:
        return False
    return sum(text.startswith(prefix) for text in texts[anchors[nth - 1] + 1 :]) >= at_least


def test_scripted_night_is_recorded_in_order_with_alerts(
    sim_box_factory: Callable[..., SimBox], hook: tuple[str, Path]
) -> None:
    url, hook_log = hook
    box = sim_box_factory(replace(FAST_OPTIONS, orphans_on_stop=2), restart="on-failure")
    deck = demo_deck(box)
    db = recording_path(deck.profile)  # where the summary looks for it
    recorder = Recorder(db, host_label=deck.host_label).start()
    feed = RecordFeed(recorder, deck.host_label)
    config = AlertingConfig(RULES, use_defaults=False, webhook=WebhookConfig(url, backoff_s=0.1))
    monitor = AlertMonitor(config, deck.host_label, feed=feed)

    async def record(stop: asyncio.Event) -> None:
        await HeadlessRecorder(deck, feed, FAST, monitor).run(None, stop)

    background = BackgroundRecording(record)
    try:
        box.start()  # 1. the load
        wait_for(lambda: _has(db, "ready: "), timeout_s=120, step_s=0.3)
        pid = box.unit.main_pid  # 2. an injected failure: the server dies
        os.kill(pid, signal.SIGKILL)
        wait_for(
            lambda: _has(db, "ready: ", 2), timeout_s=120, step_s=0.3
        )  # 3. the unit restarted it
        box.stop()  # 4. a stop that leaves two workers holding GPU memory
        # The stop's leftovers, not the crash's: a SIGKILLed server's workers can be sampled
        # as leftovers too before the unit restarts (then this waited for nothing and the
        # kill below could end the stop's leftovers before a sample saw them).
        wait_for(
            lambda: _has_after(db, "leftover appeared", "ready: ", 2, at_least=2),
            timeout_s=60,
            step_s=0.3,
        )

        async def operator_kill() -> int:  # 5. the operator's kill (confirmed, audited)
            context = await deck_context(deck)
            listing = await list_gpu_processes(deck.host, await gpu_snapshot(deck), context)
            report = await kill_processes(
                deck.host, leftovers(listing.processes), context, read_only=False, timeout_s=5
            )
            return sum(outcome.ended for outcome in report.outcomes)

        assert asyncio.run(operator_kill()) == 2
        wait_for(lambda: _has(db, "leftover gone", 2), timeout_s=60, step_s=0.3)
        wait_for(lambda: _has(db, "kill-outcome"), timeout_s=30, step_s=0.3)
        wait_for(lambda: _has(db, "resolved: leftovers"), timeout_s=30, step_s=0.3)
    finally:
        background.stop()
        monitor.close()
        recorder.close()

    with RecordingReader(db) as reader:
        events = reader.events()
    texts = [event.text for event in events]
    stamps = [event.ts_s for event in events]
    assert stamps == sorted(stamps)

    def first(prefix: str, after: int = -1) -> int:
        found = (i for i, text in enumerate(texts) if i > after and text.startswith(prefix))
        index = next(found, None)
        assert index is not None, f"no {prefix!r} after event {after}: {texts}"
        return index

    # the night, in order
    ready_1 = first("ready: ")
    crash = next(i for i, t in enumerate(texts) if i > ready_1 and ": failed (failed)" in t)
    fired_failed = first("CRITICAL unit-failed", ready_1)
    restarted = first("vllm-kimi-k25-int4.service: activating", crash)
    ready_2 = first("ready: ", restarted)
    appeared = first("leftover appeared", ready_2)
    fired_leftovers = first("WARNING leftovers", ready_2)
    killed = first("kill-outcome", appeared)
    gone = first("leftover gone", appeared)
    assert ready_1 < crash < restarted < ready_2 < appeared < killed
    assert killed <= gone or stamps[gone] >= stamps[killed] - 1.0
    # The first load's phases are recorded before it is ready (on a loaded machine the
    # short "starting" phase can pass between two samples; a later phase is still seen).
    assert first("load phase: ") < ready_1
    assert any("restarts 1" in text for text in texts[crash:])
    # alerts fire within 2 s of their condition, and resolve
    assert stamps[fired_failed] - stamps[crash] <= 2.0
    assert stamps[fired_leftovers] - stamps[appeared] <= 2.0
    assert first("resolved: unit-failed", fired_failed) > fired_failed
    # nothing recorded twice
    keyed = [(event.ts_s, event.text) for event in events]
    assert len(keyed) == len(set(keyed))
    assert count(db, "gpu_ticks") > 10
    # the webhook got each firing exactly once. The crash's own orphans may be seen as
    # leftovers before the restart ends them (on a loaded machine they live a poll longer):
    # then the recording and the webhook both have that firing too.
    wait_for(
        lambda: hook_log.exists() and len(hook_log.read_text().splitlines()) >= 4, timeout_s=30
    )
    bodies = [json.loads(json.loads(line)["body"]) for line in hook_log.read_text().splitlines()]
    fired = [(body["alert"], body["state"]) for body in bodies]
    assert fired.count(("unit-failed", "firing")) == 1
    recorded_leftover_firings = sum(text.startswith("WARNING leftovers") for text in texts)
    assert fired.count(("leftovers", "firing")) == recorded_leftover_firings >= 1
    # the summary's view of the night: two starts, both served, the same configuration
    history = recorded_history(deck.profile, deck.host_label)
    assert history is not None
    attempts = "\n".join(deployment_attempts_lines(history))
    rows = [
        line for line in attempts.splitlines() if line.startswith("| 1 ") or line.startswith("| 2 ")
    ]
    assert len(rows) == 2, attempts
    assert "model=moonshotai/Kimi-K2.5" in rows[0] and "TP=8" in rows[0]
    assert "same as before" in rows[1]
    assert all("| served |" in row for row in rows), attempts
    incidents = "\n".join(recorded_incidents_lines(history))
    assert "CRITICAL unit-failed" in incidents and "leftover appeared" in incidents


def test_a_recorder_started_after_the_load_catches_up(
    sim_box_factory: Callable[..., SimBox], tmp_path: Path
) -> None:
    box = sim_box_factory(FAST_OPTIONS)
    box.start()
    assert box.wait_until_active(timeout_s=120) == "active"
    wait_for(lambda: "Application startup complete" in box.log_path.read_text(), timeout_s=60)
    deck = demo_deck(box)
    db = tmp_path / "late.sqlite"
    recorder = Recorder(db, host_label=deck.host_label).start()
    feed = RecordFeed(recorder, deck.host_label)

    async def record(stop: asyncio.Event) -> None:
        await HeadlessRecorder(deck, feed, FAST).run(None, stop)

    background = BackgroundRecording(record)
    try:
        wait_for(
            lambda: _has(db, "ready: ") and count(db, "metrics") >= 1, timeout_s=60, step_s=0.3
        )
    finally:
        background.stop()
        recorder.close()
    texts = _texts(db)
    assert texts.count("load phase: serving") == 1  # where it was, noted once
    assert not any(
        text.startswith("load phase: weights") for text in texts
    )  # the past is not replayed
