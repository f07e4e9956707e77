"""What the console's panes say through an SSH outage (sshd stopped mid-load, then back).

The box is this machine behind its own real sshd (tests/support/standin_sshd.py) with a
stand-in `nvidia-smi` on the sessions' PATH (no GPU here) replaying captured output; the
service log is a plain file followed with `tail -F` over SSH, written here with vLLM's
load lines stamped now. The profile names no unit, as the simulator's box profile does.

- The service state of a profile with no unit is never "unknown (host unreachable ...)"
  once connected: nothing about it is read from the host.
- While the connection is cut the GPU rows keep their last sample, with the note
  "GPU source lost: ... (last sample N s ago)" that README promises.
- After the reconnect the GPU rows are sampled again within seconds.
- The load strip says its data is "as of HH:MM:SS, before the connection was cut", stops
  counting (no clock moving, no "ready in about"), and keeps saying so after the
  reconnect until a new log line arrives.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.widgets import Static

from tests.support.gpu_fixtures import FAKE_SMI, NVIDIA_SMI_FIXTURES
from tests.support.sshd_fixtures import SshdPair, SshdServer
from tests.support.standin_sshd import standin_sshd
from tui.app import ServedeckApp
from tui.core.config import HostConfig, Profile, ServiceConfig
from tui.deck import Deck
from tui.hosts.ssh import SSHHost
from widgets.header_bar import HeaderBar
from widgets.load_strip import LoadStrip
from widgets.service_line import ServiceLine

pytestmark = [pytest.mark.sshd, pytest.mark.usefixtures("private_home")]

_CUT_MARK = "before the connection was cut"
_DEADLINE_S = 60.0
_SHOWN_WITHIN_S = 3.0  # the header shows a cut within 2 s; the panes with it
_GPU_BACK_S = 5.0  # after the header says connected (the fault tests: resumed within 5 s)


def _stamp() -> str:
    return time.strftime("%m-%d %H:%M:%S")


def _load_lines() -> str:
    """A load two shards of eight in, as vLLM logs it (stamped now: a live load)."""
    return "\n".join(
        [
            f"(APIServer pid=15354) INFO {_stamp()} [api_utils.py:347]  version 0.32.0",
            f"(Worker pid=15446) INFO {_stamp()} [cpu_model_runner.py:68] "
            "Starting to load model /models/tiny-llama...",
            "Loading safetensors checkpoint shards:   0% Completed | 0/8 [00:00<?, ?it/s]",
            "Loading safetensors checkpoint shards:  25% Completed | 2/8 [00:02<00:06, 1.00s/it]",
            "",
        ]
    )


@pytest.fixture
def smi_box(sshd_pair: SshdPair, tmp_path: Path) -> Iterator[tuple[SshdServer, HostConfig]]:
    for fixture in NVIDIA_SMI_FIXTURES.glob("handmade_8x_h200_*"):
        (tmp_path / fixture.name).write_bytes(fixture.read_bytes())
    tools = {"nvidia-smi": FAKE_SMI}
    with standin_sshd(sshd_pair, tmp_path, tools, {"FAKE_SMI_DIR": str(tmp_path)}) as box:
        yield box


def _text(app: ServedeckApp, widget: type[Static] | str) -> str:
    found = app.query_one(widget) if isinstance(widget, type) else app.query_one(widget, Static)
    return str(found.render())


async def _until(pilot: object, predicate: Callable[[], object], what: str, limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {limit_s:g} s: {what}")
        await pilot.pause(0.05)  # type: ignore[attr-defined]


async def test_panes_through_an_ssh_outage(
    smi_box: tuple[SshdServer, HostConfig], tmp_path: Path
) -> None:
    server, config = smi_box
    log = tmp_path / "server.log"
    log.write_text(_load_lines())
    profile = Profile(name="outage", host=config, service=ServiceConfig(log_file=str(log)))
    app = ServedeckApp(profile, Deck(profile, SSHHost(config)))
    async with app.run_test(size=(140, 40)) as pilot:
        header = app.query_one(HeaderBar)

        def strip() -> str:
            return _text(app, LoadStrip)

        def note() -> str:
            return _text(app, "#deck-note")

        await _until(
            pilot,
            lambda: (
                app.last_gpu is not None
                and app.last_gpu.available
                and header.connection_state == "connected"
                and "shard 2/8" in strip()
            ),
            "connected, GPUs sampled and the load read",
            _DEADLINE_S,
        )
        await pilot.pause(1.0)  # a few polls while connected
        assert "unknown (host unreachable" not in _text(app, ServiceLine)
        assert app.sources.service_unknown_since_s is None

        server.stop()  # sshd down: the sessions die, no reconnect until it is back
        await _until(pilot, lambda: app.sources.health["host"].failing, "the cut shown", 10.0)
        await _until(pilot, lambda: _CUT_MARK in strip(), "the strip marked", _SHOWN_WITHIN_S)
        await _until(
            pilot, lambda: "GPU source lost" in note(), "the GPU source's note", _SHOWN_WITHIN_S
        )
        assert "last sample" in note()
        assert app.last_gpu is not None and app.last_gpu.available  # the rows keep it
        frozen = strip()
        assert "shard 2/8" in frozen and "ready in about" not in frozen
        await pilot.pause(6.0)  # an outage past the SSH backoff's cap and a few stream restarts
        assert strip() == frozen, "the strip's clock moved during the outage"
        assert "unknown (host unreachable" not in _text(app, ServiceLine)

        server.start()
        await _until(
            pilot,
            lambda: (
                not app.sources.health["host"].failing and header.connection_state == "connected"
            ),
            "the reconnect",
            _DEADLINE_S,
        )
        assert _CUT_MARK in strip(), "connected, no new line yet: the strip is still of before"
        # The GPU rows are of now again soon after the host is: a restart of the nvidia-smi
        # stream that found the host unreachable is no failure of nvidia-smi to back off from.
        await _until(
            pilot, lambda: "GPU source lost" not in note(), "GPU samples again", _GPU_BACK_S
        )

        with log.open("a") as out:
            out.write(
                "Loading safetensors checkpoint shards:  38% Completed | 3/8 [00:03<00:05, 1.00s/it]\n"
            )
        await _until(
            pilot,
            lambda: "shard 3/8" in strip() and _CUT_MARK not in strip(),
            "the strip of now after a new line",
            _DEADLINE_S,
        )
        await pilot.press("q")
