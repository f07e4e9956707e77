"""A profile on a box behind a jump host: logs, status and HTTP through the SSH route.

The "remote box" is this machine reached through two real sshd servers (jump A -> B);
the service is the simulator serving on B's loopback, which the console reaches only
through an SSH port forward, as with a real vLLM bound to 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.sshd_fixtures import SshdPair
from tui.core.config import Profile, ServiceConfig
from tui.deck import Deck
from tui.hosts.ssh import SSHHost
from tui.sim.box import SimBox

pytestmark = pytest.mark.sshd
REPO = Path(__file__).resolve().parents[2]


async def test_remote_loopback_service_is_reached_through_an_ssh_forward(
    sshd: SshdPair, serving_box: SimBox
) -> None:
    config = sshd.jump_config()
    profile = Profile(
        name="remote",
        host=config,
        service=ServiceConfig(base_url=serving_box.base_url, log_file=str(serving_box.log_path)),
    )
    deck = Deck(profile, SSHHost(config))
    try:
        url = await deck.reachable_base_url()
        assert url != serving_box.base_url and url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient(timeout=10) as client:
            assert (await client.get(f"{url}/health")).status_code == 200
            models = (await client.get(f"{url}/v1/models")).json()
        assert models["data"][0]["id"]
        # The same forward is reused while the connection lives.
        assert await deck.reachable_base_url() == url
        lines = deck.log_lines(initial_lines=500, follow=False)
        assert lines is not None
        texts = [line.text async for line in lines]
        assert any("Application startup complete." in text for text in texts)
    finally:
        await deck.close()


def test_status_over_a_jump_host_reads_log_and_http(
    sshd: SshdPair, serving_box: SimBox, tmp_path: Path
) -> None:
    config = sshd.jump_config()
    toml = sshd.profile_toml(config, name="jumped")
    toml += (
        f'\n[service]\nlog_file = "{serving_box.log_path}"\nbase_url = "{serving_box.base_url}"\n'
    )
    profile_path = tmp_path / "jumped.toml"
    profile_path.write_text(toml)
    result = subprocess.run(
        [sys.executable, "-m", "tui", "status", "--json", "-p", str(profile_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["errors"] == []
    assert report["load"]["phase"] == "serving"
    assert report["readiness"]["health_ok"] is True
    assert report["metrics"] is not None
    assert "via" in report["host"]
