"""A unit-like service running the real vLLM CPU build, and the Deck of its CPU box.

Stand-in, because no real part can run here: systemd is not the init of this machine, so
the unit's start, stop and state are `tui.sim.unit.SimUnit`'s (a real process in its own
session, SIGTERMed on stop and SIGKILLed after the unit's stop timeout, active once its
port listens, failed when it exits by itself), and its configuration is read at each
start as systemd reads it after a daemon-reload: the unit file, then its drop-ins in name
order; the last `ExecStart=` wins and an empty one resets it; `Environment=` assignments
add up and a later one wins; `WorkingDirectory=`. Everything else a tune touches is real:
the drop-ins written through the Host (mkdir, tee, rm), the venv's `vllm serve` with their
flags and environment, its log, /health, the benchmark process, the killer's listing
(no GPU here), the restart guard, the recorder. The GPUs are this machine's: none, said
by a real `nvidia-smi` lookup.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
from pathlib import Path

from tests.support.vllm_harness import MAX_MODEL_LEN, server_env
from tests.support.vllm_install import VllmVenv
from tui.core.config import Profile
from tui.deck import Deck
from tui.hosts.local import LocalHost
from tui.serving.unit.exec_start import exec_start_argv
from tui.serving.unit.lint_run import UnitFile
from tui.serving.unit.service import (
    ActionOutcome,
    ServiceAction,
    ServiceController,
    UnitState,
    audited_action,
    describe_action,
    parse_systemctl_show,
)
from tui.sim.unit import SimUnit

UNIT = "vllm-tiny.service"
STOP_TIMEOUT_S = 60.0  # systemd's TimeoutStopSec: vLLM's CPU engine ends within it


def unit_text(
    venv: VllmVenv, model_dir: Path, port: int, workdir: Path, tmpdir: Path, run_id: str
) -> str:
    """The operator's unit: the harness's server (private caches, offline, marked with
    run_id so every process it spawns can be found) as a systemd service."""
    env = server_env(venv, workdir, tmpdir, run_id)
    own = {k: v for k, v in env.items() if os.environ.get(k) != v}
    environment = "".join(f"Environment={shlex.quote(f'{k}={v}')}\n" for k, v in own.items())
    argv = [
        str(venv.vllm_bin), "serve", str(model_dir), "--host", "127.0.0.1", "--port", str(port),
        "--dtype", "bfloat16", "--max-model-len", str(MAX_MODEL_LEN), "--enforce-eager",
    ]  # fmt: skip
    return (
        "[Unit]\nDescription=vLLM CPU build serving the tiny test model\n\n"
        f"[Service]\nWorkingDirectory={workdir}\n{environment}"
        f"ExecStart={shlex.join(argv)}\n"
    )


def resolved(text: str, dropin_dir: Path) -> tuple[list[str], dict[str, str], str | None]:
    """(ExecStart's argv, Environment=, WorkingDirectory=) of the unit with its drop-ins."""
    parts = [text] + [
        path.read_text(encoding="utf-8") for path in sorted(dropin_dir.glob("*.conf"))
    ]
    whole = "\n".join(parts)
    env: dict[str, str] = {}
    folder: str | None = None
    for line in whole.replace("\\\n", " ").splitlines():
        key, _, value = line.strip().partition("=")
        if key == "Environment":
            env.update(word.partition("=")[::2] for word in shlex.split(value))
        elif key == "WorkingDirectory":
            folder = value.strip()
    return exec_start_argv(UNIT, whole), env, folder


class ProcessUnit(SimUnit):
    """A SimUnit whose each start runs the unit file's command line as resolved then."""

    def __init__(self, text: str, state_dir: Path, port: int) -> None:
        self.text = text
        self.dropin_dir = state_dir / f"{UNIT}.d"
        super().__init__(UNIT, state_dir, port, self._argv, stop_timeout_s=STOP_TIMEOUT_S)

    def _argv(self) -> list[str]:
        argv, env, folder = resolved(self.text, self.dropin_dir)
        assignments = [f"{k}={v}" for k, v in env.items()]
        chdir = ["-C", folder] if folder else []
        return ["env", "-u", "PYTHONPATH", "-u", "PYTHONHOME", *chdir, *assignments, *argv]

    def show(self) -> dict[str, str]:
        program = exec_start_argv(UNIT, self.text)[0]
        folder = resolved(self.text, self.dropin_dir)[2] or ""
        exec_start = f"{{ path={program} ; argv[]={program} ; }}"
        return {**super().show(), "WorkingDirectory": folder, "ExecStart": exec_start}


class ProcessUnitService:
    """ServiceController over a ProcessUnit; actions audited as a systemd unit's are."""

    state_costs_a_command = False

    def __init__(self, unit: ProcessUnit, host_label: str) -> None:
        self.unit = unit
        self.host_label = host_label

    async def state(self) -> UnitState:
        return parse_systemctl_show(UNIT, self.unit.show_text())

    async def _act(self, verb: str, confirmed: bool) -> ActionOutcome:
        async def run(action: ServiceAction) -> tuple[int, str, float]:
            started = time.monotonic()
            if verb in ("stop", "restart"):
                await asyncio.to_thread(self.unit.stop)
                done = ("inactive", "failed")
                await asyncio.to_thread(self.unit.wait_for_state, done, STOP_TIMEOUT_S + 5)
            if verb in ("start", "restart"):
                await asyncio.to_thread(self.unit.start)
            return 0, f"{verb} {UNIT}: {self.unit.state}", time.monotonic() - started

        action = describe_action(self.host_label, UNIT, verb)
        return await audited_action(action, run, confirmed=confirmed, read_only=False)

    async def start(self, *, confirmed: bool) -> ActionOutcome:
        return await self._act("start", confirmed)

    async def stop(self, *, confirmed: bool) -> ActionOutcome:
        return await self._act("stop", confirmed)

    async def restart(self, *, confirmed: bool) -> ActionOutcome:
        return await self._act("restart", confirmed)


class CpuBoxDeck(Deck):
    """This machine (no GPU) serving through the ProcessUnit; its log is the unit's output."""

    def __init__(self, profile: Profile, unit: ProcessUnit) -> None:
        self.unit = unit
        super().__init__(profile, LocalHost())

    @property
    def unit_dropin_dir(self) -> str | None:
        return str(self.unit.dropin_dir)

    @property
    def daemon_reload_argv(self) -> tuple[str, ...] | None:
        return None  # the unit reads its drop-ins at each start

    def service(self) -> ServiceController | None:
        return ProcessUnitService(self.unit, self.host_label)

    async def unit_file(self) -> UnitFile:
        return UnitFile(UNIT, self.unit.text, None)
