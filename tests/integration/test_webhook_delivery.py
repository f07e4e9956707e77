"""Alert deliveries run apart and end by their deadline; a failed one is a Timeline event.

A real aiohttp server on loopback (its own thread and event loop) that hangs on the
first POST or answers 500; the monitor records into a real recording file."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from tests.support.record_support import wait_for
from tui.alerts.monitor import DELIVERY_FAILED, AlertMonitor
from tui.alerts.webhook import WebhookSender
from tui.core.alert_rules import AlertingConfig, AlertRule, WebhookConfig
from tui.record.feed import RecordFeed
from tui.record.query import RecordingReader
from tui.record.writer import Recorder

HOT = AlertRule("gpu-hot", "gpu.temperature_c", ">=", 85, 0, "warning", 0, "GPU hot")
LOST = AlertRule("unit-failed", "unit.failed", ">=", 1, 0, "critical", 0, "service failed")
SECRET_PATH = "/hook/T0/B0/sk-" + "s" * 24


class HookServer:
    """Answers POSTs as `mode` says: "hang-first" (the first never answers) or "500"."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.posts: list[tuple[float, dict[str, object]]] = []  # (arrival, body)
        self.loop = asyncio.new_event_loop()
        self.release = asyncio.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    async def _handle(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        self.posts.append((time.monotonic(), body))
        if self.mode == "hang-first" and len(self.posts) == 1:
            await self.release.wait()  # held until the test ends
        if self.mode == "500":
            return web.Response(status=500)
        return web.Response(status=200)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self.loop.run_forever()

    def start(self) -> HookServer:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.release.set)
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{SECRET_PATH}"


@pytest.fixture
def hang_first() -> Iterator[HookServer]:
    server = HookServer("hang-first").start()
    yield server
    server.stop()


@pytest.fixture
def answers_500() -> Iterator[HookServer]:
    server = HookServer("500").start()
    yield server
    server.stop()


def _monitor(url: str, db: Path, retries: int = 0) -> tuple[AlertMonitor, Recorder]:
    recorder = Recorder(db, host_label="box").start()
    config = AlertingConfig(
        rules=(HOT, LOST),
        use_defaults=False,
        webhook=WebhookConfig(url, timeout_s=30, retries=retries, backoff_s=0.05),
    )
    return AlertMonitor(config, "box", feed=RecordFeed(recorder, "box")), recorder


def test_a_hung_endpoint_does_not_hold_the_next_alert(
    hang_first: HookServer, tmp_path: Path
) -> None:
    """Failed before: one thread posted in order, so the critical alert waited behind the
    hung POST for its whole timeout (30 s here; 1e9 s was accepted)."""
    monitor, recorder = _monitor(hang_first.url, tmp_path / "r.sqlite")
    try:
        monitor._observe({"gpu.temperature_c": {0: 90.0}}, 1.0)  # its POST hangs
        wait_for(lambda: len(hang_first.posts) == 1, timeout_s=10)
        sent = time.monotonic()
        monitor._observe({"unit.failed": {None: 1.0}}, 2.0)
        wait_for(lambda: len(hang_first.posts) == 2, timeout_s=10)
        arrived, body = hang_first.posts[1]
        assert body["severity"] == "critical" and body["rule"] == "unit-failed"
        assert arrived - sent < 5.0
    finally:
        monitor.webhook.close(timeout_s=0.1)  # type: ignore[union-attr]
        recorder.close()


def test_a_failed_delivery_is_a_recorded_event(answers_500: HookServer, tmp_path: Path) -> None:
    """Failed before: "gave up after 2 attempts: HTTP 500" was kept in a list nobody read."""
    db = tmp_path / "r.sqlite"
    monitor, recorder = _monitor(answers_500.url, db, retries=1)
    try:
        monitor._observe({"unit.failed": {None: 1.0}}, 1.0)
        wait_for(lambda: len(answers_500.posts) == 2, timeout_s=10)
        wait_for(lambda: monitor.webhook.deliveries, timeout_s=10)  # type: ignore[union-attr]
        monitor._observe({"unit.failed": {None: 1.0}}, 2.0)  # the next observation records it
    finally:
        monitor.close()
        recorder.close()
    with RecordingReader(db) as reader:
        failed = [e for e in reader.events() if e.data.get("event") == DELIVERY_FAILED]
    assert len(failed) == 1, [e.text for e in failed]
    event = failed[0]
    assert event.kind == "alert" and event.data["alert"] == "unit-failed"
    assert event.data["reason"] == "gave up after 2 attempts: HTTP 500"
    assert "HTTP 500" in event.text and f"127.0.0.1:{answers_500.port}/..." in event.text
    assert "sk-" not in json.dumps(event.data) + event.text  # the URL's path is its secret


def test_changes_of_one_alert_stay_in_order(hang_first: HookServer, tmp_path: Path) -> None:
    """Firing then resolved of one alert never overtake each other, hung or not."""
    monitor, recorder = _monitor(hang_first.url, tmp_path / "r.sqlite")
    try:
        monitor._observe({"gpu.temperature_c": {0: 90.0}}, 1.0)
        monitor._observe({"gpu.temperature_c": {0: 50.0}}, 2.0)
        wait_for(lambda: len(hang_first.posts) == 1, timeout_s=10)
        time.sleep(0.5)
        assert len(hang_first.posts) == 1  # the resolve waits behind the hung firing
        hang_first.loop.call_soon_threadsafe(hang_first.release.set)
        wait_for(lambda: len(hang_first.posts) == 2, timeout_s=10)
        assert [body["state"] for _, body in hang_first.posts] == ["firing", "resolved"]
    finally:
        monitor.close()
        recorder.close()


def test_a_night_of_deliveries_keeps_only_the_latest_outcomes() -> None:
    """Each POST's outcome stays in memory for a look; a night of alerts keeps the latest."""
    server = HookServer("200").start()
    try:
        sender = WebhookSender(WebhookConfig(server.url, timeout_s=10, retries=0))
        for number in range(400):
            sender.send("leftovers", {"state": "firing", "n": number})
            if number % 100 == 99:  # under MAX_WAITING: every one is posted
                wait_for(lambda n=number: len(server.posts) == n + 1, timeout_s=30)
        sender.close(timeout_s=30)
    finally:
        server.stop()
    assert len(server.posts) == 400
    assert len(sender.deliveries) <= 256
    assert all(delivery.ok for delivery in sender.deliveries)
