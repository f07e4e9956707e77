"""SimDeck: the Deck of a simulated box, answering every question the Deck is asked.

The box runs on this machine (real processes, real HTTP); its GPUs, unit, log,
overview and facts come from the box's state instead of the host. The SimDeck
owns the box: opening the demo starts it, closing the Deck ends every process
it started. Nothing downstream asks whether a Deck is simulated.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace

from tui.core.config import Profile
from tui.deck import CheckpointFacts, Deck
from tui.gpu.model import GpuSource
from tui.health.interconnect.rules import InterconnectReport
from tui.health.report import HealthReport
from tui.hostfacts.doctor import DoctorCheck
from tui.hostfacts.facts import DiskFacts, SoftwareVersions
from tui.hostfacts.hostinfo import HostOverview
from tui.hosts.base import Host
from tui.hosts.local import LocalHost
from tui.logs.line import LogLine
from tui.logs.tail import follow_file_batches
from tui.plan.build import ModelFacts
from tui.plan.inventory import GpuInventory, inventory_from_snapshot
from tui.serving.unit.lint_run import UnitFile
from tui.serving.unit.service import ServiceController
from tui.sim import spec
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.checks import collect_demo_health, run_demo_interconnect
from tui.sim.doctor import run_demo_doctor
from tui.sim.facts import simulated_disk, simulated_model_facts, simulated_software
from tui.sim.gpu_source import SimGpuSource
from tui.sim.overview import simulated_overview
from tui.sim.service import SIM_HOST_LABEL as SIM_LABEL
from tui.sim.service import SimService
from tui.sim.spec import LOAD_PHASE_SHARES, UNIT_NAME
from tui.sim.unit_file import UNIT_TEXT


class SimDeck(Deck):
    """A Deck whose box is a SimBox on this machine; closing the Deck closes the box."""

    def __init__(
        self,
        profile: Profile,
        host: Host,
        box: SimBox,
        _gpu_source: GpuSource | None = None,
    ) -> None:
        self.box = box
        super().__init__(profile, host, _gpu_source)

    @property
    def base_url(self) -> str:
        return self.box.base_url

    @property
    def service_port(self) -> int:
        return self.box.port

    @property
    def host_label(self) -> str:
        return SIM_LABEL

    @property
    def systemd_unit(self) -> str | None:
        return None  # the simulated unit answers through SimService, never systemctl

    @property
    def unit_dropin_dir(self) -> str | None:
        return str(self.box.dropin_dir)  # read by the box at each start

    @property
    def daemon_reload_argv(self) -> tuple[str, ...] | None:
        return None  # the simulated unit reads its drop-ins at each start

    @property
    def unit_label(self) -> str:
        return self.profile.service.unit or "demo"

    @property
    def checkpoint_dir(self) -> str | None:
        """No checkpoint on disk unless the box's slow-disk mode made its shard folder."""
        shard_dir = self.box.options.shard_dir
        return str(shard_dir) if shard_dir else None

    @property
    def has_kernel_log(self) -> bool:
        return False

    def process_scope(self) -> tuple[int, ...] | None:
        return tuple(pid for pid, _ticks, _role in self.box.started_processes())

    def owned_processes(self) -> tuple[tuple[int, int], ...]:
        return tuple((pid, ticks) for pid, ticks, _role in self.box.started_processes())

    @property
    def probe_unsupported(self) -> str | None:
        return "the simulator's GPUs cannot run the probe (no CUDA there)"

    @property
    def stated_load_s(self) -> float | None:
        return self.box.load_seconds

    def stated_phase_shares(self) -> Mapping[str, float] | None:
        return dict(LOAD_PHASE_SHARES)

    async def _open_gpu_source(self) -> GpuSource:
        return SimGpuSource(self.box)

    def service(self) -> ServiceController | None:
        return SimService(self.box, read_only=self.profile.read_only)

    def read_log_batches(
        self, initial_lines: int = 200, follow: bool = True
    ) -> AsyncIterator[Sequence[LogLine]] | None:
        log_path = str(self.box.log_path)
        return follow_file_batches(self.host, log_path, initial_lines=initial_lines, follow=follow)

    @property
    def log_from_file(self) -> bool:
        return True

    def log_label(self) -> str | None:
        return "(simulator) server.log"

    async def overview(self) -> HostOverview:
        return simulated_overview(await asyncio.to_thread(self.box.snapshot))

    async def refresh_overview(self, overview: HostOverview) -> HostOverview:
        return await self.overview()  # simulated: in-process and cheap

    async def software_versions(self) -> SoftwareVersions:
        return simulated_software()

    async def disk_facts(self) -> DiskFacts | None:
        return simulated_disk(self.profile.model.path)

    async def model_facts(self) -> ModelFacts:
        return simulated_model_facts()

    async def gpu_inventory(self) -> GpuInventory:
        """The simulated GPUs as the box reports them (idle before it starts)."""
        return inventory_from_snapshot(await asyncio.to_thread(self.box.snapshot))

    async def checkpoint(self) -> CheckpointFacts:
        return CheckpointFacts(
            simulated_model_facts(),
            spec.MODEL_WEIGHTS_BYTES,
            spec.MODEL_SHARDS,
            "packaged config.json (simulated checkpoint)",
        )

    async def unit_file(self) -> UnitFile:
        return UnitFile(UNIT_NAME, UNIT_TEXT, None)

    async def doctor_checks(self) -> list[DoctorCheck]:
        """About the simulator, never this machine's driver, systemd or port 8000."""
        return await run_demo_doctor(self)

    async def interconnect(self) -> InterconnectReport:
        return await run_demo_interconnect(self.box)

    async def hardware_health(self) -> HealthReport:
        return await collect_demo_health()

    async def health_counters(self, buses: dict[str, int]) -> HealthReport:
        return await self.hardware_health()

    async def close(self) -> None:
        await super().close()
        await asyncio.to_thread(self.box.close)


def sim_profile(profile: Profile, box: SimBox) -> Profile:
    """The profile with the box's own URL (the box picks a free port)."""
    return replace(profile, service=replace(profile.service, base_url=box.base_url))


def open_sim_deck(
    profile: Profile,
    *,
    load_s: float,
    autostart: bool = False,
    wait_ready: bool = False,
    orphans_on_stop: int = 2,
    time_scale: float | None = None,
    server_args: tuple[str, ...] = (),
) -> SimDeck:
    """A fresh simulated box on this machine and its Deck (`server_args`: more server flags)."""
    options = SimServerOptions(
        orphans_on_stop=orphans_on_stop, time_scale=time_scale, extra_args=server_args
    )
    box = SimBox(load_seconds=load_s, options=options)
    if autostart:
        box.start()
        if wait_ready:
            box.wait_until_active(timeout_s=load_s * 4 + 30)
    return SimDeck(sim_profile(profile, box), LocalHost(label=SIM_LABEL), box)
