"""A Deck: every source of one profile, opened once and shared by the console and the CLI.

The demo differs only here: its GPUs, unit and log come from a SimBox running on
this machine (real processes, real HTTP), everything downstream is the same code.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit, urlunsplit

from tui.core.config import Profile
from tui.core.redact import remember_secret
from tui.gpu.model import GpuSource
from tui.hostfacts.hostinfo import HostOverview, collect_overview, refresh_vitals
from tui.hosts.base import Host
from tui.hosts.local import LocalHost
from tui.logs.line import LogLine
from tui.serving.service import ServiceController, SystemdService

# A demo opened by a one-shot CLI command loads quickly; the console's demo shows a full load.
CLI_DEMO_LOAD_S = 4.0
CONSOLE_DEMO_LOAD_S = 45.0


async def _without_read_time(lines: AsyncIterator[LogLine]) -> AsyncIterator[LogLine]:
    async for line in lines:
        yield replace(line, timestamp_s=None)


@dataclass
class Deck:
    profile: Profile
    host: Host
    box: object | None = None  # tui.sim.box.SimBox for the demo
    _gpu_source: GpuSource | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        remember_secret(self.api_key)  # redacted from every output, whoever writes it

    @property
    def base_url(self) -> str:
        if self.box is not None:
            return self.box.base_url  # type: ignore[attr-defined]
        return self.profile.service.base_url

    @property
    def api_key(self) -> str | None:
        """The key from the env var the profile names (never stored anywhere by servedeck)."""
        name = self.profile.service.api_key_env
        return os.environ.get(name) if name else None

    @property
    def host_label(self) -> str:
        return "simulator" if self.box is not None else self.profile.host.route

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
            if self.box is not None:
                from tui.gpu.sim_source import SimGpuSource

                self._gpu_source = SimGpuSource(self.box)  # type: ignore[arg-type]
            else:
                from tui.gpu.factory import gpu_source_for  # NVML loads with the first sample

                self._gpu_source = await gpu_source_for(
                    self.host, self.profile, interval_s=self.profile.gpu.refresh_s
                )
        return self._gpu_source

    def service(self) -> ServiceController | None:
        if self.box is not None:
            from tui.sim.service import SimService

            return SimService(self.box, read_only=self.profile.read_only)  # type: ignore[arg-type]
        if self.profile.service.unit:
            return SystemdService(
                self.host,
                self.profile.service.unit,
                use_sudo=self.profile.service.use_sudo,
                read_only=self.profile.read_only,
            )
        return None

    def log_lines(
        self, initial_lines: int = 200, follow: bool = True
    ) -> AsyncIterator[LogLine] | None:
        """The service log as LogLines: the journal for a unit, else the log file."""
        from tui.logs.journal import JournalFollower
        from tui.logs.tail import follow_file

        if self.box is not None:
            log_path = str(self.box.log_path)  # type: ignore[attr-defined]
            return follow_file(self.host, log_path, initial_lines=initial_lines, follow=follow)
        service = self.profile.service
        if service.log_file:
            return follow_file(
                self.host, service.log_file, initial_lines=initial_lines, follow=follow
            )
        if service.unit:
            return JournalFollower(
                self.host, service.unit, initial_lines=initial_lines, follow=follow
            ).lines()
        return None

    def replay_log_lines(self, initial_lines: int = 2000) -> AsyncIterator[LogLine] | None:
        """The log's last lines, once, each stamped with the time it was logged.

        A tailed file stamps lines with the moment they were read, which squeezes a
        30-minute load into milliseconds; the engine's own `MM-DD HH:MM:SS` prefix is
        the truth for a replay. Journal entries keep their real time.
        """
        source = self.log_lines(initial_lines=initial_lines, follow=False)
        from_file = self.box is not None or bool(self.profile.service.log_file)
        if source is None or not from_file:
            return source
        return _without_read_time(source)

    async def overview(self) -> HostOverview:
        if self.box is not None:
            from tui.sim.overview import simulated_overview

            snapshot = await asyncio.to_thread(self.box.snapshot)  # type: ignore[attr-defined]
            return simulated_overview(snapshot)
        return await collect_overview(self.host)

    async def refresh_overview(self, overview: HostOverview) -> HostOverview:
        """Fresh memory, uptime and load on top of what overview() learnt once."""
        if self.box is not None:
            return await self.overview()  # simulated: in-process and cheap
        return await refresh_vitals(self.host, overview)

    async def close(self) -> None:
        if self._gpu_source is not None:
            await self._gpu_source.aclose()
        await self.host.close()
        if self.box is not None:
            await asyncio.to_thread(self.box.close)  # type: ignore[attr-defined]


def open_deck(
    profile: Profile,
    *,
    demo_load_s: float = CLI_DEMO_LOAD_S,
    demo_autostart: bool = False,
    demo_wait_ready: bool = False,
    demo_orphans_on_stop: int = 2,
    demo_time_scale: float | None = None,
) -> Deck:
    """Create the profile's host (and, for the demo, a fresh simulated box on this machine)."""
    if profile.is_demo:
        from tui.sim.box import SimBox, SimServerOptions

        options = SimServerOptions(orphans_on_stop=demo_orphans_on_stop, time_scale=demo_time_scale)
        box = SimBox(load_seconds=demo_load_s, options=options)
        if demo_autostart:
            box.start()
            if demo_wait_ready:
                box.wait_until_active(timeout_s=demo_load_s * 4 + 30)
        demo = replace(profile, service=replace(profile.service, base_url=box.base_url))
        return Deck(demo, LocalHost(label="simulator"), box)
    from tui.console import host_for

    return Deck(profile, host_for(profile))
