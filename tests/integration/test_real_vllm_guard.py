"""The restart guard on the real orphans of a SIGKILLed vLLM 0.32.0 API server.

A server is started and its API server SIGKILLed: VLLM::EngineCore, VLLM::Worker
and the multiprocessing resource_tracker are orphaned, none holding a GPU (there is
none here), and a stranger takes the freed port. Stand-ins, each because no real part
can run here:
  - GPU memory: the deck's GPU source reports the orphaned EngineCore and Worker as
    NVML would, with made-up figures (test_real_vllm_procs.OrphanHints);
  - systemd does not run here: the deck's service is a controller whose state is
    `systemctl show` of the stopped unit the server stands for (run by this user from
    the server's directory, ExecStart= the vLLM venv's `vllm serve`: what proves the
    orphans are its own), and whose restart starts a fresh real vLLM server through the
    harness;
  - `K` is the library call the console's K makes (kill_processes on the leftovers),
    limited to this server's processes (found by the harness's env marker) because
    other real servers may share this machine; the stranger, never a leftover, is
    ended as `servedeck kill PID --confirm-foreign PID` does, with its pid typed.
The listing, classification, the guard, signalling and the audit log are all real.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.integration.test_real_vllm_procs import (
    GIB,
    UNIT,
    OrphanHints,
    orphan_server,
    server_unit_show,
    titled,
    tracker_of,
    write_profile,
)
from tests.support.procs_fixtures import wait_until
from tests.support.vllm_harness import VllmServer, VllmServerFactory
from tests.support.vllm_procs import processes_with_marker, still_running
from tui.compose import open_deck
from tui.core.audit import read_audit
from tui.core.profile_store import load_profile
from tui.ops.gpu_hints import deck_context, rereader
from tui.ops.restart_guard import check, guard_listing, guarded_action
from tui.procs import leftovers
from tui.procs.kill import kill_processes
from tui.serving.unit.restart_guard import GuardRefused
from tui.serving.unit.service import ActionOutcome, ServiceAction, UnitState, parse_systemctl_show

pytestmark = pytest.mark.real_vllm

LISTENER = r"""
import socket, sys, time
sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", int(sys.argv[1])))
sock.listen()
print("listening", flush=True)
while True:
    time.sleep(3600)
"""


class HarnessService:
    """Stand-in for systemd (not running here): the stopped unit as `systemctl show` says,
    and restart starts a real server."""

    def __init__(self, factory: VllmServerFactory, show_text: str) -> None:
        self.factory = factory
        self.show_text = show_text
        self.started: list[VllmServer] = []

    async def state(self) -> UnitState:
        return parse_systemctl_show(UNIT, self.show_text)

    async def _start(self, verb: str) -> ActionOutcome:
        server = await asyncio.to_thread(self.factory)
        self.started.append(server)
        action = ServiceAction("local", UNIT, verb, ("vllm", "serve"))
        return ActionOutcome(action, True, 0, f"healthy on {server.base_url}", server.start_s)

    async def start(self, *, confirmed: bool) -> ActionOutcome:
        return await self._start("start")

    async def restart(self, *, confirmed: bool) -> ActionOutcome:
        return await self._start("restart")

    async def stop(self, *, confirmed: bool) -> ActionOutcome:
        raise AssertionError("not used")


def test_guard_refuses_over_real_orphans_then_k_then_restart_succeeds(
    vllm_server_factory: VllmServerFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, orphans = orphan_server(vllm_server_factory)
    core, worker = titled(orphans, "VLLM::EngineCore"), titled(orphans, "VLLM::Worker")
    tracker = tracker_of(orphans)
    own = {core.pid, worker.pid, tracker.pid}
    hints = OrphanHints([(core, 2 * GIB), (worker, 30 * GIB)])

    async def hint_source(deck: object) -> OrphanHints:
        return hints

    controller = HarnessService(vllm_server_factory, server_unit_show(server))
    monkeypatch.setattr("tui.deck.Deck.gpu_source", hint_source)
    monkeypatch.setattr("tui.deck.Deck.service", lambda deck: controller)
    profile = load_profile(str(write_profile(tmp_path, server)))

    # The API server's port is free again: a stranger takes it, as happens in real life.
    squatter = subprocess.Popen(
        [sys.executable, "-c", LISTENER, str(server.port)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert squatter.stdout is not None and squatter.stdout.readline().strip() == "listening"

        async def scenario() -> None:
            deck = open_deck(profile)
            try:
                listing = await guard_listing(deck)
                by_pid = {p.pid: p for p in listing.processes}
                assert own | {squatter.pid} <= set(by_pid), listing.processes
                for pid in own:
                    assert by_pid[pid].klass == "leftover", by_pid[pid]
                    assert "from the unit's directory" in by_pid[pid].reason
                assert by_pid[tracker.pid].pid_source == "pattern"
                assert "no GPU memory" in by_pid[tracker.pid].reason
                assert by_pid[worker.pid].gpu_memory_bytes == 30 * GIB
                assert "child of orphan" in by_pid[worker.pid].reason
                # A port proves nothing: the stranger is in the way, never a leftover.
                stranger = by_pid[squatter.pid]
                assert stranger.klass == "foreign", stranger
                assert stranger.reason.startswith(
                    f"holds port {server.port} while {UNIT} is not running"
                ), stranger.reason

                with pytest.raises(GuardRefused) as refused:
                    await guarded_action(deck, "restart", confirmed=True)
                text = str(refused.value)
                for pid in own | {squatter.pid}:
                    assert f"pid {pid} (" in text, text
                assert f"pid {worker.pid} (30.0 GiB)" in text
                assert f"port {server.port}" in text and "32.0 GiB GPU memory" in text
                assert f"not proven {UNIT}'s, so never a leftover: pid {squatter.pid}" in text
                assert controller.started == []

                # K: end the leftovers through the identity-checked, audited path.
                targets = [p for p in leftovers(listing.processes) if p.pid in own | {squatter.pid}]
                assert {p.pid for p in targets} == own
                report = await kill_processes(
                    deck.host,
                    targets,
                    await deck_context(deck),
                    read_only=False,
                    timeout_s=60.0,
                    reread=rereader(deck),
                    action="kill --leftovers",
                )
                # The resource_tracker may end by itself once its clients are gone.
                outcomes = {o.identity.pid: o.outcome for o in report.outcomes}
                assert set(outcomes.values()) <= {"terminated", "killed", "gone"}, outcomes
                assert outcomes[core.pid] != "gone"
                assert report.freed_bytes == 32 * GIB

                # The stranger still holds the port: the guard names it, none of ours.
                verdict = await check(deck, "restart")
                assert verdict.blocked and squatter.pid in verdict.pids, verdict
                assert not own & set(verdict.pids), verdict
                # Ended as `servedeck kill PID --confirm-foreign PID` does: its pid typed.
                ended = await kill_processes(
                    deck.host,
                    [stranger],
                    await deck_context(deck),
                    read_only=False,
                    timeout_s=60.0,
                    confirmed_foreign={squatter.pid},
                    action="kill",
                )
                assert [o.outcome for o in ended.outcomes] == ["terminated"], ended.outcomes

                assert not (await check(deck, "restart")).blocked
                outcome = await guarded_action(deck, "restart", confirmed=True)
                assert outcome.ok
            finally:
                await deck.close()

        asyncio.run(scenario())
    finally:
        squatter.kill()
        squatter.wait(timeout=30)

    assert wait_until(lambda: not any(still_running(p) for p in orphans), timeout_s=60.0)
    assert not processes_with_marker(server.run_id)
    (fresh,) = controller.started
    assert httpx.get(f"{fresh.base_url}/health", timeout=10).status_code == 200
    events = [r["event"] for r in read_audit()]
    assert events == [
        "service.refused",
        *["kill-request", "kill-outcome"] * 2,
    ], events
    refused_record = next(r for r in read_audit() if r["event"] == "service.refused")
    assert set(refused_record["pids"]) >= own | {squatter.pid}
    # The restarted server is healthy and unused: the orphan killer's test orphans it.
    vllm_server_factory.hand_on(fresh)
