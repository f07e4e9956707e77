"""A Deck: every source of one profile, opened once and shared by the console and the CLI.

Callers ask the Deck, never which kind of box is behind it. The simulator's Deck
(`tui.sim.deck.SimDeck`) overrides the few methods whose answer comes from the
simulated box instead of the host; everything downstream is the same code. A Deck is
opened by the composition root (`tui.compose.open_deck`), the one place that knows both.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from tui.core.config import Profile
from tui.core.errors import ServedeckError
from tui.core.redact import remember_secret
from tui.gpu.model import GpuSource
from tui.hostfacts.doctor import run_doctor
from tui.hostfacts.hostinfo import HostOverview, collect_overview, refresh_vitals
from tui.hosts.base import Host
from tui.logs.line import LogLine, flat_lines
from tui.logs.redacted import redacted_batches
from tui.serving.unit.service import ServiceController, SystemdService

if TYPE_CHECKING:
    from tui.health.interconnect.rules import InterconnectReport
    from tui.health.report import HealthReport
    from tui.hostfacts.doctor import DoctorCheck
    from tui.hostfacts.facts import DiskFacts, SoftwareVersions
    from tui.plan.build import ModelFacts
    from tui.plan.inventory import GpuInventory
    from tui.serving.unit.lint_run import UnitFile


async def _without_read_time(lines: AsyncIterator[LogLine]) -> AsyncIterator[LogLine]:
    async for line in lines:
        yield replace(line, timestamp_s=None)


@dataclass(frozen=True, slots=True)
class CheckpointFacts:
    """The model's facts as the Deck could read them, and where they came from."""

    facts: ModelFacts
    size_bytes: int | None
    shards: int | None
    source: str


@dataclass
class Deck:
    profile: Profile
    host: Host
    _gpu_source: GpuSource | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        remember_secret(self.api_key)  # redacted from every output, whoever writes it

    @property
    def base_url(self) -> str:
        return self.profile.service.base_url

    @property
    def service_port(self) -> int:
        return self.profile.service.port

    @property
    def api_key(self) -> str | None:
        """The key from the env var the profile names (never stored anywhere by servedeck)."""
        name = self.profile.service.api_key_env
        return os.environ.get(name) if name else None

    @property
    def host_label(self) -> str:
        return self.profile.host_label

    @property
    def systemd_unit(self) -> str | None:
        """The unit `systemctl` manages on the host; None when there is none to manage."""
        return self.profile.service.unit or None

    @property
    def unit_dropin_dir(self) -> str | None:
        """Where the unit's drop-ins go (systemd's `UNIT.d`); None without a unit to change."""
        unit = self.systemd_unit
        return f"/etc/systemd/system/{unit}.d" if unit else None

    @property
    def daemon_reload_argv(self) -> tuple[str, ...] | None:
        """What makes the service manager read a changed drop-in; None: nothing to run."""
        sudo = ("sudo", "-n") if self.profile.service.use_sudo else ()
        return (*sudo, "systemctl", "daemon-reload") if self.systemd_unit else None

    @property
    def unit_label(self) -> str:
        """The service's name in exported metrics."""
        return self.profile.service.unit or ""

    @property
    def checkpoint_dir(self) -> str | None:
        """The folder of the model's shards, to watch while they load."""
        return self.profile.model.path

    @property
    def has_kernel_log(self) -> bool:
        """Whether the host's kernel log can tell XIDs (a simulated box has none)."""
        return True

    @property
    def probe_unsupported(self) -> str | None:
        """Why the GPU probe cannot run here at all, whatever the GPUs do; None when it can."""
        return None

    def process_scope(self) -> tuple[int, ...] | None:
        """The pids this box started, when it shares its machine with others (a simulated
        box); None: every process on the host is the box's."""
        return None

    def owned_processes(self) -> tuple[tuple[int, int], ...]:
        """(pid, start ticks) of the processes the box recorded starting for its service (a
        simulated box's pids.log): proof that their orphans are its leftovers. A real host
        keeps no such record: its unit's cgroup, User= and WorkingDirectory= are the proof."""
        return ()

    @property
    def stated_load_s(self) -> float | None:
        """A load time the box states itself (the simulator knows its phases); None for real hosts."""
        return None

    def stated_phase_shares(self) -> Mapping[str, float] | None:
        """Each load phase's share of stated_load_s, as the box states them (the ready ETA's
        plan); None for real hosts, whose phases come from their earlier loads."""
        return None

    async def reachable_base_url(self) -> str:
        """The service URL as this machine can reach it: a remote loopback goes through SSH."""
        url = self.base_url
        parts = urlsplit(url)
        forward = getattr(self.host, "forward_local_port", None)
        if forward is None or parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            return url
        local_port = await forward(parts.hostname, parts.port or 80)
        return urlunsplit(parts._replace(netloc=f"127.0.0.1:{local_port}"))

    async def gpu_source(self) -> GpuSource:
        if self._gpu_source is None:
            self._gpu_source = await self._open_gpu_source()
        return self._gpu_source

    async def _open_gpu_source(self) -> GpuSource:
        from tui.gpu.factory import gpu_source_for  # NVML loads with the first sample

        return await gpu_source_for(self.host, self.profile, interval_s=self.profile.gpu.refresh_s)

    def service(self) -> ServiceController | None:
        if self.profile.service.unit:
            return SystemdService(
                self.host,
                self.profile.service.unit,
                use_sudo=self.profile.service.use_sudo,
                read_only=self.profile.read_only,
            )
        return None

    def log_batches(
        self, initial_lines: int = 200, follow: bool = True
    ) -> AsyncIterator[Sequence[LogLine]] | None:
        """The service log as batches of LogLines (a read each), secrets redacted: every
        pane, export, recording and command reads the log through here. The console takes
        a flood a batch at a time."""

        source = self.read_log_batches(initial_lines=initial_lines, follow=follow)
        return None if source is None else redacted_batches(source)

    def read_log_batches(
        self, initial_lines: int = 200, follow: bool = True
    ) -> AsyncIterator[Sequence[LogLine]] | None:
        """The log as the host holds it (not redacted: log_batches is the way in): the
        journal for a unit, else the log file."""
        from tui.logs.journal import JournalFollower
        from tui.logs.tail import follow_file_batches

        service = self.profile.service
        if service.log_file:
            return follow_file_batches(
                self.host, service.log_file, initial_lines=initial_lines, follow=follow
            )
        if service.unit:
            return JournalFollower(
                self.host, service.unit, initial_lines=initial_lines, follow=follow
            ).batches()
        return None

    def log_lines(
        self, initial_lines: int = 200, follow: bool = True
    ) -> AsyncIterator[LogLine] | None:
        """log_batches line by line, for the readers that take one line at a time."""
        batches = self.log_batches(initial_lines=initial_lines, follow=follow)
        return None if batches is None else flat_lines(batches)

    @property
    def log_from_file(self) -> bool:
        """Whether log_lines tails a file (its lines are stamped when read, not when logged)."""
        return bool(self.profile.service.log_file)

    def log_label(self) -> str | None:
        """Where the service log lives, for a reader of the summary."""
        service = self.profile.service
        if service.log_file:
            return service.log_file
        if service.unit:
            return f"journalctl -u {service.unit}"
        return None

    def replay_log_lines(self, initial_lines: int = 2000) -> AsyncIterator[LogLine] | None:
        """The log's last lines, once, each stamped with the time it was logged.

        A tailed file stamps lines with the moment they were read, which squeezes a
        30-minute load into milliseconds; the engine's own `MM-DD HH:MM:SS` prefix is
        the truth for a replay. Journal entries keep their real time.
        """
        source = self.log_lines(initial_lines=initial_lines, follow=False)
        if source is None or not self.log_from_file:
            return source
        return _without_read_time(source)

    async def overview(self) -> HostOverview:
        return await collect_overview(self.host)

    async def refresh_overview(self, overview: HostOverview) -> HostOverview:
        """Fresh memory, uptime and load on top of what overview() learnt once."""
        return await refresh_vitals(self.host, overview)

    async def software_versions(self) -> SoftwareVersions:
        """The serving stack's versions, read with the profile's Python."""
        from tui.hostfacts.facts import collect_versions

        versions = await collect_versions(self.host, self.profile.service.python or "python3")
        if versions.error:
            raise ServedeckError(versions.error)
        return versions

    async def disk_facts(self) -> DiskFacts | None:
        """The model folder's disk; None without a model path."""
        from tui.hostfacts.facts import collect_disk

        if not self.profile.model.path:
            return None
        return await collect_disk(self.host, self.profile.model.path)

    async def model_facts(self) -> ModelFacts:
        """The model's facts from the checkpoint's headers over the Host (for the plan)."""
        from tui.plan import read_model_dir

        if not self.profile.model.path:
            raise ServedeckError(f"profile {self.profile.name}: model.path is not set")
        return await read_model_dir(self.host, self.profile.model.path)

    async def gpu_inventory(self) -> GpuInventory:
        """The GPUs for the plan: count, memory and compute capability (`nvidia-smi`)."""
        from tui.plan.inventory import inventory_from_nvidia_smi

        return await inventory_from_nvidia_smi(self.host)

    async def checkpoint(self) -> CheckpointFacts:
        """The model's facts: the checkpoint's headers when readable, else its config alone."""
        import posixpath

        from tui.plan import model_from_config, read_model_dir

        model = self.profile.model
        if not model.path:
            raise ServedeckError("the profile names no model.path")
        try:
            facts = await read_model_dir(self.host, model.path)
        except ServedeckError as error:
            config_path = posixpath.join(model.path, "config.json")
            text = await self.host.read_file(config_path)
            facts = model_from_config(text, config_path, model.checkpoint_gib)
            return CheckpointFacts(facts, None, None, f"config.json only ({error})")
        source = f"config.json + {facts.weights.files} shard headers"
        return CheckpointFacts(facts, facts.weights.total_bytes, facts.weights.files, source)

    async def unit_file(self) -> UnitFile:
        """The unit's text (`systemctl cat`) and its last stop's duration, for the unit lint."""
        from tui.serving.unit.lint_run import read_unit_file

        return await read_unit_file(self.host, self.profile)

    async def doctor_checks(self) -> list[DoctorCheck]:
        """`servedeck doctor`'s checks of this box: host, GPU tools, systemd, the port."""

        return await run_doctor(self.host, self.profile)

    async def interconnect(self) -> InterconnectReport:
        """The read-only interconnect checks (PCIe, NVLink, NCCL settings) of this box."""
        from tui.health.interconnect.doctor_run import run_interconnect

        return await run_interconnect(self.host, self.profile)

    async def hardware_health(self) -> HealthReport:
        """The GPUs' health counters and the XIDs logged this boot."""
        from tui.health.health_run import collect_health

        return await collect_health(self.host)

    async def health_counters(self, buses: dict[str, int]) -> HealthReport:
        """The counters alone (no journal read), for the console's periodic poll."""
        from tui.health.health_run import counters_report

        return await counters_report(self.host, buses)

    async def close(self) -> None:
        if self._gpu_source is not None:
            await self._gpu_source.aclose()
        await self.host.close()
