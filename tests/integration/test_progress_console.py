"""The console on a simulated box whose rank is SIGSTOPped: the service line says the engine
is stalled and why, the engine-stalled alert fires; SIGCONT: serving again, the alert resolves."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import httpx

from tests.integration.test_progress_sim import OPTIONS
from tests.support.summary_helpers import demo_deck
from tui.app import ServedeckApp
from tui.core.config import demo_profile
from tui.sim.box import SimBox
from widgets.service_line import ServiceLine

N_S = 4.0


def _line(app: ServedeckApp) -> str:
    return str(app.query_one(ServiceLine).render())


async def test_the_service_line_shows_a_stall_and_its_kind(
    sim_box_factory: Callable[..., SimBox],
) -> None:
    box = sim_box_factory(OPTIONS, load_seconds=1.5, gpu_count=4)
    box.start()
    assert box.wait_until_ready(60)
    base = demo_profile()
    profile = replace(base, service=replace(base.service, stall_after_s=N_S))
    deck = demo_deck(box, profile)
    app = ServedeckApp(deck.profile, deck)
    body = {"model": "kimi-k2.5-int4", "prompt": "hi", "max_tokens": 4000, "stream": True}
    async with httpx.AsyncClient(base_url=box.base_url, timeout=120) as client:
        async with app.run_test(size=(160, 40)) as pilot:

            async def until(words: str, timeout_s: float) -> float:
                start = time.monotonic()
                while words not in _line(app):
                    assert time.monotonic() - start < timeout_s, _line(app)
                    await pilot.pause(0.25)
                return time.monotonic() - start

            async with client.stream("POST", "/v1/completions", json=body) as answer:
                stream = answer.aiter_bytes()
                await until("serving", 60)
                await client.post("/_sim/fault", json={"stop_rank": 1})
                took_s = await until("stalled: a rank stopped", N_S + 10)
                print(f"\nconsole: stalled shown {took_s:.1f} s after SIGSTOP (N = {N_S:g} s)")
                assert app.record.recording is None or "engine-stalled" in (
                    app.record.recording.monitor.engine.firing()
                )
                await client.post("/_sim/fault", json={"stop_rank": None})
                async for _ in stream:
                    if "serving" in _line(app):
                        break
                await until("serving", 15)
                if app.record.recording is not None:
                    assert "engine-stalled" not in app.record.recording.monitor.engine.firing()


async def test_a_stall_offers_d_and_r_and_d_attaches_the_stacks(
    sim_box_factory: Callable[..., SimBox],
) -> None:
    """Stalled: the toast and the service line offer D and R; D saves each rank's stacks and
    the handoff's Incidents entry names the file and the summary; R opens the guard's confirm
    (nothing restarts by itself)."""
    from tui.core.audit import read_audit
    from tui.screens.confirm_action import ConfirmActionScreen
    from tui.summary.incidents import incidents_from_audit

    box = sim_box_factory(OPTIONS, load_seconds=1.5, gpu_count=4)
    box.start()
    assert box.wait_until_ready(60)
    base = demo_profile()
    profile = replace(base, service=replace(base.service, stall_after_s=N_S))
    deck = demo_deck(box, profile)
    app = ServedeckApp(deck.profile, deck)
    body = {"model": "kimi-k2.5-int4", "prompt": "hi", "max_tokens": 4000, "stream": True}

    def notes() -> list[str]:
        return [f"{note.title}: {note.message}" for note in app._notifications]

    async with httpx.AsyncClient(base_url=box.base_url, timeout=120) as client:
        async with app.run_test(size=(160, 40)) as pilot:

            async def until(check: Callable[[], bool], what: str, timeout_s: float) -> None:
                start = time.monotonic()
                while not check():
                    assert time.monotonic() - start < timeout_s, (what, _line(app), notes())
                    await pilot.pause(0.25)

            async with client.stream("POST", "/v1/completions", json=body):
                await until(lambda: "serving" in _line(app), "serving", 60)
                await client.post("/_sim/fault", json={"stop_rank": 2})
                await until(lambda: "stalled" in _line(app), "stalled", N_S + 10)
                assert "[D stacks · R restart]" in _line(app)
                toast = next(n for n in notes() if n.startswith("Engine stalled"))
                assert "Press D for each rank's stacks" in toast and "R restarts it" in toast
                await pilot.press("D")
                await until(
                    lambda: any(n.startswith("Engine stacks: ranks") for n in notes()), "D", 30
                )
                shown = next(n for n in notes() if n.startswith("Engine stacks: ranks"))
                assert "rank 2 in " in shown and "[do_signal_stop]" in shown, shown
                (entry,) = [
                    i
                    for i in incidents_from_audit(read_audit(), deck.host.label)
                    if i.event == "engine.stacks"
                ]
                assert "rank 2 in " in entry.text and "saved to " in entry.text
                await pilot.press("R")
                await until(lambda: isinstance(app.screen, ConfirmActionScreen), "the confirm", 15)
                await pilot.press("escape")
                await client.post("/_sim/fault", json={"stop_rank": None})


async def test_no_stall_while_a_benchmark_from_this_console_warms_up(
    sim_box_factory: Callable[..., SimBox],
) -> None:
    """A rank is stopped before `b`: the warm-up request waits past N with no token. While
    the benchmark warms up the verdict is unknown (never stalled); cancelled, nothing waits."""
    box = sim_box_factory(OPTIONS, load_seconds=1.5, gpu_count=4)
    box.start()
    assert box.wait_until_ready(60)
    base = demo_profile()
    profile = replace(base, service=replace(base.service, stall_after_s=N_S))
    deck = demo_deck(box, profile)
    app = ServedeckApp(deck.profile, deck)
    async with httpx.AsyncClient(base_url=box.base_url, timeout=30) as client:
        async with app.run_test(size=(160, 40)) as pilot:
            while not app.ready:
                await pilot.pause(0.25)
            await client.post("/_sim/fault", json={"stop_rank": 0})
            await pilot.press("b")
            start = time.monotonic()
            while not app.bench.warming_up:
                assert time.monotonic() - start < 30, "the warm-up never started"
                await pilot.pause(0.25)
            seen: set[str] = set()
            start = time.monotonic()
            while time.monotonic() - start < N_S + 6:  # well past N with no token
                verdict = app.serving.engine_progress.verdict
                if verdict is not None:
                    seen.add(verdict.state)
                assert "stalled" not in _line(app), _line(app)
                await pilot.pause(0.25)
            assert app.bench.warming_up and "stalled" not in seen, seen
            assert app.serving.engine_progress.verdict is not None
            assert "warm-up" in " ".join(app.serving.engine_progress.verdict.evidence)
            await pilot.press("c")  # the warm-up request is dropped: nothing pending
            start = time.monotonic()
            while app.bench.warming_up or "idle" not in _line(app):
                assert time.monotonic() - start < 20, _line(app)
                await pilot.pause(0.25)
            await client.post("/_sim/fault", json={"stop_rank": None})
