"""Alerts: rules with for-duration and hysteresis, mute/ack, profile parsing, the webhook to a real server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.record_support import wait_for
from tui.alerts.engine import AlertEngine
from tui.alerts.monitor import AlertMonitor
from tui.alerts.webhook import WebhookSender
from tui.core.alert_rules import DEFAULT_RULES, AlertingConfig, AlertRule, WebhookConfig
from tui.core.config import demo_profile, profile_from_data
from tui.record.session import ConsoleRecording, restore_mutes

KV = AlertRule("kv-full", "engine.kv_cache_usage_pct", ">=", 95, 10, "warning", 5)


def _kv(value: float) -> dict[str, dict[int | None, float]]:
    return {"engine.kv_cache_usage_pct": {None: value}}


def test_fires_after_for_duration_and_resolves_with_hysteresis() -> None:
    engine = AlertEngine((KV,))
    assert engine.observe(_kv(96), 100.0) == []  # pending
    assert engine.observe(_kv(97), 109.0) == []
    fired = engine.observe(_kv(97), 110.0)
    assert [(c.state, c.at_s, c.since_s) for c in fired] == [("firing", 110.0, 100.0)]
    # hovering around the threshold does not flap
    for t, value in enumerate((94, 96, 91, 95, 90.5), start=111):
        assert engine.observe(_kv(value), float(t)) == []
    resolved = engine.observe(_kv(89), 120.0)
    assert [c.state for c in resolved] == ["resolved"]
    assert engine.firing() == []


def test_a_dip_resets_the_pending_clock() -> None:
    engine = AlertEngine((KV,))
    engine.observe(_kv(96), 0.0)
    engine.observe(_kv(80), 5.0)  # condition broken
    assert engine.observe(_kv(96), 11.0) == []
    assert engine.observe(_kv(96), 20.0) == []
    assert engine.observe(_kv(96), 21.0)[0].state == "firing"


def test_per_gpu_alerts_are_separate_and_mute_or_ack_apply_per_alert() -> None:
    hot = AlertRule("gpu-hot", "gpu.temperature_c", ">=", 85, 0, "warning", 5)
    engine = AlertEngine((hot,))
    engine.mute("gpu-hot:gpu1", 3600, now_s=0.0)
    changes = engine.observe({"gpu.temperature_c": {0: 90.0, 1: 91.0, 2: 60.0}}, 1.0)
    assert {(c.alert_id, c.muted) for c in changes} == {
        ("gpu-hot:gpu0", False),
        ("gpu-hot:gpu1", True),
    }
    engine.acknowledge("gpu-hot:gpu0")
    assert "gpu-hot:gpu0" in engine.acked
    engine.observe({"gpu.temperature_c": {0: 70.0}}, 2.0)
    assert "gpu-hot:gpu0" not in engine.acked  # an ack lasts one firing
    assert engine.firing() == ["gpu-hot:gpu1"]


def test_profile_alerts_parse_and_errors_name_the_field() -> None:
    data = {
        "alerting": {"webhook_url": "https://hooks.example/x", "webhook_retries": 2},
        "alerts": [
            {
                "name": "kv-full",
                "metric": "engine.kv_cache_usage_pct",
                "condition": ">= 90",
                "for_s": 5,
            },
            {
                "name": "hot",
                "metric": "gpu.temperature_c",
                "condition": "> 80",
                "severity": "critical",
            },
        ],
    }
    profile, problems = profile_from_data(data, "p", None)
    assert problems == []
    rules = {rule.name: rule for rule in profile.alerting.effective_rules()}
    assert rules["kv-full"].threshold == 90 and rules["kv-full"].for_s == 5  # replaces the default
    assert rules["hot"].op == ">" and rules["hot"].severity == "critical"
    assert "unit-failed" in rules  # defaults stay on
    assert profile.alerting.webhook == WebhookConfig("https://hooks.example/x", retries=2)
    assert len(profile.alerting.effective_rules()) == len(DEFAULT_RULES) + 1
    bad = {
        "alerts": [{"name": "x", "metric": "gpu.temp", "condition": "hot"}],
        "alerting": {"webhook_url": "ftp://nope"},
    }
    _, problems = profile_from_data(bad, "p", None)
    assert any(p.startswith("alerts[0].metric: expected one of") for p in problems)
    assert any(p.startswith("alerts[0].condition: expected an operator") for p in problems)
    assert any(p.startswith("alerting.webhook_url: expected an http(s) URL") for p in problems)


@pytest.fixture
def hook_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    """A real HTTP server process; `fail` / `redirect` come from the test's parametrization."""
    options = getattr(request, "param", {})
    log = tmp_path / "hook.jsonl"
    argv = [
        sys.executable,
        str(Path(__file__).parents[1] / "support" / "webhook_server.py"),
        str(log),
    ]
    argv += ["--fail", str(options.get("fail", 0))] + (
        ["--redirect"] if options.get("redirect") else []
    )
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    try:
        yield f"http://127.0.0.1:{port}/hook", log
    finally:
        server.kill()
        server.wait()


def _requests(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_webhook_posts_exactly_once_per_firing(hook_server: tuple[str, Path]) -> None:
    url, log = hook_server
    secret = "sk-" + "a" * 24
    config = AlertingConfig(
        rules=(
            AlertRule(
                "kv-full", "engine.kv_cache_usage_pct", ">=", 95, 0, "warning", 5, f"key {secret}"
            ),
        ),
        use_defaults=False,
        webhook=WebhookConfig(url, timeout_s=5, retries=3, backoff_s=0.1),
    )
    monitor = AlertMonitor(config, "box")
    try:
        for t, value in enumerate((96, 97, 98, 99, 80, 96, 97), start=1):
            monitor._observe(_kv(value), float(t))
        wait_for(lambda: len(_requests(log)) >= 3, timeout_s=30)
    finally:
        monitor.close()
    requests = _requests(log)
    states = [json.loads(str(r["body"]))["state"] for r in requests]
    assert states == ["firing", "resolved", "firing"]  # one POST per change, none repeated
    assert all(r["path"] == "/hook" for r in requests)
    assert secret not in log.read_text() and "[REDACTED]" in str(requests[0]["body"])


@pytest.mark.parametrize("hook_server", [{"fail": 2}], indirect=True)
def test_webhook_retries_a_500_with_backoff(hook_server: tuple[str, Path]) -> None:
    url, log = hook_server
    sender = WebhookSender(WebhookConfig(url, timeout_s=5, retries=3, backoff_s=0.1))
    sender.send("a", {"state": "firing"})
    sender.close(timeout_s=30)
    assert [r["status"] for r in _requests(log)] == [500, 500, 200]
    assert sender.deliveries[0].ok and sender.deliveries[0].attempts == 3


@pytest.mark.parametrize("hook_server", [{"redirect": True}], indirect=True)
def test_webhook_contacts_only_the_configured_url(hook_server: tuple[str, Path]) -> None:
    url, log = hook_server
    sender = WebhookSender(WebhookConfig(url, timeout_s=5, retries=0))
    sender.send("a", {"state": "firing"})
    sender.close(timeout_s=30)
    assert [r["path"] for r in _requests(log)] == ["/hook"]  # the redirect is not followed
    assert not sender.deliveries[0].ok


def test_webhook_gives_up_on_a_dead_server_without_blocking() -> None:
    sender = WebhookSender(
        WebhookConfig("http://127.0.0.1:9/hook", timeout_s=1, retries=1, backoff_s=0.05)
    )
    sender.send("a", {"state": "firing"})
    sender.close(timeout_s=30)
    delivery = sender.deliveries[0]
    assert not delivery.ok and delivery.attempts == 2 and "gave up" in delivery.detail


def test_mutes_are_kept_in_the_recording_across_restarts(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    first = ConsoleRecording(demo_profile(), "simulator", db_path=db)
    try:
        assert first.recording
        first.monitor.engine.mute("kv-full", 3600)
        first.persist_alert_state("kv-full")
    finally:
        first.close()
    engine = AlertEngine(DEFAULT_RULES)
    restore_mutes(db, engine)
    assert engine.is_muted("kv-full") and not engine.is_muted("unit-failed")
    again = ConsoleRecording(demo_profile(), "simulator", db_path=db)
    try:
        assert again.monitor.engine.is_muted("kv-full")
    finally:
        again.close()


def test_a_damaged_recording_file_leaves_the_console_working(tmp_path: Path) -> None:
    db = tmp_path / "broken.sqlite"
    db.write_bytes(b"this is not SQLite" * 200)
    recording = ConsoleRecording(demo_profile(), "simulator", db_path=db)
    try:
        assert not recording.recording
        assert (
            recording.status.startswith("not recording: ") and "broken.sqlite" in recording.status
        )
        recording.feed.observe_unit(None, 1.0, "ssh: gone")  # still safe to feed: goes nowhere
    finally:
        recording.close()
