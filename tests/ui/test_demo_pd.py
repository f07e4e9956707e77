"""`servedeck demo --pd-role decode --pd-fault prefill-idle`: the P/D view without hardware.

The demo's flags become vLLM's `--kv-transfer-config` (NixlConnector, kv_role) on the
simulator (real processes, a real HTTP server exposing NIXL's metric families); with the
prefill peer idle, requests served by decode move no KV, and the Deck says so.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.ui.test_offered_keys import until
from tui.app import ServedeckApp
from tui.commands.demo_cmd import demo_server_args
from tui.compose import open_deck
from tui.core.config import demo_profile
from tui.core.errors import UsageError
from tui.deck import Deck
from tui.sim.spec import SERVED_MODEL_NAME
from widgets.load_strip import LoadStrip

REPO = Path(__file__).resolve().parents[2]


def pd_args(role: str | None, fault: str | None) -> tuple[str, ...]:
    return demo_server_args(argparse.Namespace(pd_role=role, pd_fault=fault))


def test_the_flags_are_vllms_kv_transfer_config() -> None:
    args = pd_args("decode", "prefill-idle")
    assert args[0] == "--kv-transfer-config" and args[2:] == ("--kv-transfer-fault", "prefill-idle")
    assert json.loads(args[1]) == {"kv_connector": "NixlConnector", "kv_role": "kv_consumer"}
    assert json.loads(pd_args("prefill", None)[1])["kv_role"] == "kv_producer"
    with pytest.raises(UsageError, match="--pd-fault needs --pd-role"):
        pd_args(None, "failing")


def test_the_command_line_says_what_the_flags_do_and_refuses_a_fault_alone() -> None:
    def servedeck(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tui", "demo", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
        )

    helped = servedeck("--help")
    assert "--pd-role {prefill,decode,both}" in helped.stdout
    assert "prefill/decode pair" in helped.stdout and "prefill engine handles 0" in helped.stdout
    refused = servedeck("--pd-fault", "failing")
    assert refused.returncode == 2
    assert (
        refused.stderr.strip()
        .splitlines()[-1]
        .endswith("--pd-fault needs --pd-role (prefill, decode or both)")
    )
    assert "Traceback" not in refused.stderr


@contextlib.contextmanager
def pd_deck() -> Iterator[Deck]:
    deck = open_deck(
        demo_profile(),
        demo_load_s=2.0,
        demo_autostart=True,
        demo_server_args=pd_args("decode", "prefill-idle"),
    )
    try:
        yield deck
    finally:
        deck.box.close()  # type: ignore[attr-defined]  # the demo's Deck is a SimDeck


async def _traffic(base_url: str, stop: asyncio.Event) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        body = {"model": SERVED_MODEL_NAME, "prompt": "hello there", "max_tokens": 64}
        while not stop.is_set():
            await asyncio.gather(
                *(client.post(f"{base_url}/v1/completions", json=body) for _ in range(4))
            )


async def test_the_decode_side_with_an_idle_prefill_peer_warns_on_the_deck() -> None:
    with pd_deck() as deck:
        app = ServedeckApp(deck.profile, deck)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.ready, 90, "ready")
            stop = asyncio.Event()
            sending = asyncio.create_task(_traffic(deck.base_url, stop))
            try:

                def strip() -> str:
                    return str(app.query_one(LoadStrip).render())

                await until(pilot, lambda: "P/D decode: KV transfers" in strip(), 60, "P/D line")
                await until(
                    pilot, lambda: "prefill engine handled 0 requests" in strip(), 60, "warning"
                )
                assert "failed 0" in strip()
            finally:
                stop.set()
                await sending
