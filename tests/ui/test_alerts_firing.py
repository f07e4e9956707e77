"""The "alerts firing now" view (A): the monitor's firing alerts, acked and muted marked."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from tests.support.screen_text import screen_text
from tui.alerts.engine import AlertEngine
from tui.core.alert_rules import AlertRule
from tui.core.keymap import COMMANDS
from tui.screens.alerts_firing import AlertsFiringScreen

HOT = AlertRule("gpu-hot", "gpu.temperature_c", ">=", 85, 0, "warning", 5)
KV = AlertRule("kv-full", "engine.kv_cache_usage_pct", ">=", 95, 10, "critical", 5)


def _engine() -> AlertEngine:
    engine = AlertEngine((HOT, KV))
    engine.observe({"gpu.temperature_c": {0: 90.0, 1: 88.0, 2: 60.0}}, 100.0)
    engine.observe({"engine.kv_cache_usage_pct": {None: 96.0}}, 100.0)
    engine.observe({"engine.kv_cache_usage_pct": {None: 97.5}}, 110.0)  # fires after 10 s
    engine.observe({"gpu.temperature_c": {0: 91.0, 1: 88.0}}, 111.0)
    engine.acknowledge("gpu-hot:gpu0")
    engine.mute("gpu-hot:gpu1", 3600)  # from now: the view reads the clock
    return engine


def test_firing_now_lists_rule_severity_since_value_and_marks() -> None:
    alerts = _engine().firing_now(now_s=112.0)
    assert [a.alert_id for a in alerts] == ["kv-full", "gpu-hot:gpu0", "gpu-hot:gpu1"]
    kv, gpu0, gpu1 = alerts
    assert (kv.rule.severity, kv.since_s, kv.value, kv.gpu) == ("critical", 100.0, 97.5, None)
    assert (gpu0.value, gpu0.acknowledged, gpu0.muted, gpu0.gpu) == (91.0, True, False, 0)
    assert (gpu1.acknowledged, gpu1.muted) == (False, True)


def test_a_resolved_alert_leaves_the_view() -> None:
    engine = _engine()
    engine.observe({"gpu.temperature_c": {0: 70.0}}, 120.0)
    assert [a.alert_id for a in engine.firing_now(now_s=121.0)] == ["kv-full", "gpu-hot:gpu1"]


def test_the_key_table_has_a_for_alerts() -> None:
    from tui.app.console import ServedeckApp

    command = next(c for c in COMMANDS if c.binding_id == "alerts.open")
    assert command.key == "A" and command.scope == "app"
    assert callable(getattr(ServedeckApp, f"action_{command.action}"))


class _Host(App[None]):
    def __init__(self, engine: AlertEngine | None) -> None:
        super().__init__()
        self.engine = engine

    def compose(self) -> ComposeResult:
        yield Static("console")

    def on_mount(self) -> None:
        read = None if self.engine is None else self.engine.firing_now
        self.push_screen(AlertsFiringScreen(read, "The alert monitor has not started yet."))


async def test_view_shows_each_firing_alert_at_80_columns() -> None:
    engine = _engine()
    app = _Host(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        for word in ("kv-full", "critical", "gpu-hot GPU 0", "gpu-hot GPU 1", "acked", "muted"):
            assert word in text, text
        assert "97.5" in text and "engine.kv_cache_usage_pct >=" in text, text
        engine.observe({"engine.kv_cache_usage_pct": {None: 50.0}}, 130.0)  # resolves
        await pilot.press("r")
        await pilot.pause()
        assert "kv-full" not in screen_text(app) and "gpu-hot GPU 0" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, AlertsFiringScreen)


async def test_no_alert_and_no_monitor_are_said() -> None:
    app = _Host(AlertEngine((HOT,)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "No alert is firing now." in screen_text(app)
    app = _Host(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "not started" in screen_text(app)
