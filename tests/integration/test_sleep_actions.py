"""Sleep and wake as audited actions, against a real simulated server with --enable-sleep-mode.

The simulator serves vLLM's dev-mode routes and the `vllm:engine_sleep_state` gauge
with vLLM's labels; servedeck's action re-checks the server before acting and writes
request, refusal and outcome to the audit log.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.support.sim_fixtures import module_sim_box
from tui.core.audit import read_audit
from tui.core.errors import ServedeckError
from tui.serving.metrics import parse_metrics
from tui.serving.readiness import ReadinessProbe
from tui.serving.sleep import describe_sleep, perform_sleep, sleep_level
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.spec import SERVED_MODEL_NAME

FIXTURE = Path(__file__).parents[1] / "support" / "fixtures" / "vllm-0.32-cpu" / "metrics.txt"
OPTIONS = SimServerOptions(shards=2, extra_args=("--enable-sleep-mode",))
MODELS = (SERVED_MODEL_NAME,)


box = module_sim_box("sleep", OPTIONS, seed=5)


def test_the_real_engine_reports_awake_as_level_0() -> None:
    """vLLM 0.32's own page (captured): the gauge with awake=1 reads as level 0, not unknown."""
    if not FIXTURE.exists():
        pytest.skip("the captured vLLM fixtures are not on this machine")
    assert sleep_level(parse_metrics(FIXTURE.read_text())) == 0
    assert sleep_level(parse_metrics("vllm:num_requests_running 1\n")) is None


def test_sleep_then_wake_audited_with_the_level_read_back(box: SimBox, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    sleep = describe_sleep("sim", box.base_url, "sleep", MODELS, level=1)
    wake = describe_sleep("sim", box.base_url, "wake", MODELS)

    async def scenario() -> tuple:
        probe = ReadinessProbe(box.base_url)
        slept = await perform_sleep(sleep, confirmed=True, read_only=False, audit_path=audit)
        asleep = await probe.check()
        with pytest.raises(ServedeckError, match="already asleep"):
            await perform_sleep(sleep, confirmed=True, read_only=False, audit_path=audit)
        woken = await perform_sleep(wake, confirmed=True, read_only=False, audit_path=audit)
        awake = await probe.check()
        return slept, asleep, woken, awake

    slept, asleep, woken, awake = asyncio.run(scenario())
    assert slept.ok and woken.ok
    assert asleep.asleep is True and asleep.sleep_level == 1 and not asleep.ready
    assert awake.asleep is False and awake.sleep_level is None and awake.ready
    events = [(r["event"], r["action"], r.get("reason")) for r in read_audit(audit)]
    assert events == [
        ("sleep.request", "sleep", None),
        ("sleep.outcome", "sleep", None),
        ("sleep.refused", "sleep", "the engine is already asleep"),
        ("sleep.request", "wake", None),
        ("sleep.outcome", "wake", None),
    ]
    assert all(r["request"].startswith("POST ") for r in read_audit(audit))


def test_refused_read_only_unconfirmed_or_another_server(box: SimBox, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    sleep = describe_sleep("sim", box.base_url, "sleep", MODELS)
    other = describe_sleep("sim", box.base_url, "sleep", ("another-model",))

    async def refusals() -> list[str]:
        reasons = []
        for action, read_only, confirmed in (
            (sleep, True, True),
            (sleep, False, False),
            (other, False, True),
        ):
            with pytest.raises(ServedeckError) as raised:
                await perform_sleep(
                    action, confirmed=confirmed, read_only=read_only, audit_path=audit
                )
            reasons.append(str(raised.value))
        return reasons

    reasons = asyncio.run(refusals())
    assert "read-only mode" in reasons[0] and "not confirmed" in reasons[1]
    assert "now serves" in reasons[2] and SERVED_MODEL_NAME in reasons[2]
    assert [r["event"] for r in read_audit(audit)] == ["sleep.refused"] * 3
    assert asyncio.run(ReadinessProbe(box.base_url).check()).asleep is False  # nothing was done


def test_sleep_levels_are_only_1_or_2() -> None:
    with pytest.raises(ServedeckError, match="level 3"):
        describe_sleep("sim", "http://127.0.0.1:1", "sleep", MODELS, level=3)
