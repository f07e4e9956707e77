"""A host's HTTP checks reuse one client: a new client per poll costs ~30 ms of CPU.

Each new httpx client loads the CA bundle (ssl.create_default_context), even for plain
HTTP through the SSH forward; with two checks per host per refresh that was most of the
console's CPU on a 20-host fleet. Polled here over the real sshd fleet fixture.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from tests.support.fleet_fixtures import SshdFleet, sshd_fleet  # noqa: F401  (fixture)
from tui.fleet.collector import FleetCollector, probes_for
from tui.fleet.deck_probe import DeckProbe
from tui.fleet.groups import load_group

pytestmark = pytest.mark.sshd


async def test_polls_of_a_serving_host_create_one_http_client(
    sshd_fleet: SshdFleet,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sshd_fleet.write_group(tmp_path)
    monkeypatch.chdir(tmp_path)
    contexts: list[ssl.SSLContext] = []
    real = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        contexts.append(real(*args, **kwargs))
        return contexts[-1]

    monkeypatch.setattr(ssl, "create_default_context", counting)
    collector = FleetCollector(probes_for(load_group("lab").members), host_timeout_s=30.0)
    try:
        probe = collector.probe("host0")  # serving: /health, /v1/models and /metrics each poll
        assert isinstance(probe, DeckProbe)
        rows = [await probe.poll() for _ in range(3)]
        assert all(row.reachable and row.health_ok for row in rows), rows[-1].error
        assert rows[-1].running is not None
        assert len(contexts) == 1, f"{len(contexts)} HTTP clients for 3 polls"
    finally:
        await collector.close()
    assert probe._http_client is None  # closed with the probe
