"""A Host that answers from canned output.

Used only where the screen must be byte-for-byte stable (SVG snapshots): a real
machine's hostname, RAM and uptime change between runs. Live behaviour is covered
with LocalHost and the sshd fixture elsewhere.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace

from tui.core.config import Profile
from tui.deck import Deck
from tui.gpu.factory import NoGpuSource
from tui.gpu.model import GpuBoxSnapshot, GpuSource
from tui.hosts.base import CommandResult
from tui.logs.line import LogLine
from tui.serving.unit.service import ServiceController

SEED_BOX_OVERVIEW = (
    """\
hostname=gpu-box-01
os=Ubuntu 24.04.1 LTS
kernel=6.8.0-45-generic
arch=x86_64
cpu_model=AMD EPYC 9554 64-Core Processor
cpu_cores=128
numa_nodes=2
mem_total_kib=528280576
mem_available_kib=412345678
uptime_s=864123.4
loadavg=3.10 2.95 2.80
"""
    + "".join(
        f"gpu=GPU {index}: NVIDIA RTX PRO 6000 Blackwell Server Edition (UUID: GPU-{index:08d})\n"
        for index in range(8)
    )
    + "driver=580.82.07\n"
)


class CannedHost:
    is_local = False

    def __init__(
        self,
        label: str = "canned",
        answer: Callable[[Sequence[str], str | None], str] | None = None,
    ) -> None:
        self.label = label
        self._answer = answer or (lambda argv, stdin: SEED_BOX_OVERVIEW)
        self.calls: list[tuple[str, ...]] = []

    async def run(
        self, argv: Sequence[str], timeout_s: float = 30.0, stdin_text: str | None = None
    ) -> CommandResult:
        self.calls.append(tuple(argv))
        return CommandResult(tuple(argv), 0, self._answer(argv, stdin_text), "", 0.0)

    async def stream(
        self, argv: Sequence[str], stdin_text: str | None = None
    ) -> AsyncIterator[str]:
        for line in self._answer(argv, stdin_text).splitlines():
            yield line

    async def read_file(self, path: str, max_bytes: int = 16 * 1024 * 1024) -> bytes:
        return b""

    async def close(self) -> None:
        return None


class CannedDeck(Deck):
    """A Deck over a CannedHost with no GPU, service or log: the shell alone, byte-stable."""

    async def gpu_source(self) -> GpuSource:
        if self._gpu_source is None:
            self._gpu_source = NoGpuSource("no NVIDIA driver (canned host)")
        return self._gpu_source

    def service(self) -> ServiceController | None:
        return None

    def read_log_batches(
        self, initial_lines: int = 200, follow: bool = True
    ) -> AsyncIterator[list[LogLine]] | None:
        return None


def canned_deck(profile: Profile, host: CannedHost | None = None) -> CannedDeck:
    return CannedDeck(profile, host or CannedHost())


class _FixedGpuSource:
    """Every sample is the one snapshot it was given, retaken now."""

    name = "canned"

    def __init__(self, snapshot: GpuBoxSnapshot) -> None:
        self.snapshot = snapshot

    async def sample(self) -> GpuBoxSnapshot:
        return replace(self.snapshot, taken_at_s=time.time())

    async def aclose(self) -> None:
        return None


class CannedGpuDeck(CannedDeck):
    """The canned shell with eight GPUs (tests/support/gpu_boxes.py), for the Deck's layout."""

    def __init__(self, profile: Profile, snapshot: GpuBoxSnapshot) -> None:
        super().__init__(profile, CannedHost())
        self._canned_gpus = _FixedGpuSource(snapshot)

    async def gpu_source(self) -> GpuSource:
        return self._canned_gpus
