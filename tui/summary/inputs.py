"""What a state summary is made of: one frozen SummaryInputs, gathered once, rendered many ways.

Every part may be None: a collector that failed or timed out leaves a line in
`problems` instead, and the renderer says so where the part would have been.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tui.bench.model import BenchResult
from tui.core.config import Profile
from tui.gpu.model import GpuBoxSnapshot
from tui.hostfacts.facts import DiskFacts, SoftwareVersions
from tui.hostfacts.hostinfo import HostOverview
from tui.plan.layout import Layout, Plan
from tui.plan.modelcfg import ModelArch
from tui.plan.render import _plain
from tui.serving.load.tracker import LoadProgress
from tui.serving.metrics import ServerMetrics
from tui.serving.unit.service import UnitState

if TYPE_CHECKING:
    from tui.ops.hardware_health import HardwareHealth


@dataclass(frozen=True, slots=True)
class ModelSummary:
    """The served model: where it lives, how big it is, and its architecture."""

    name: str
    path: str | None
    arch: ModelArch | None
    size_bytes: int | None  # on disk (du) or the checkpoint's tensor bytes
    shard_count: int | None
    source: str  # how the facts were read: "config.json + shard headers", ...


@dataclass(frozen=True, slots=True)
class ServiceSummary:
    """The unit and the process behind it; the command line is already redacted."""

    engine: str
    unit: UnitState | None
    base_url: str
    port: int
    main_cmdline: str | None = None


@dataclass(frozen=True, slots=True)
class Incident:
    """One audit-log record worth a line: a kill request or outcome, a service action."""

    time: str
    event: str
    host: str
    text: str


@dataclass(frozen=True, slots=True)
class SummaryInputs:
    profile: Profile
    host_label: str
    generated_at_s: float
    overview: HostOverview | None = None
    software: SoftwareVersions | None = None
    disk: DiskFacts | None = None
    gpu: GpuBoxSnapshot | None = None
    model: ModelSummary | None = None
    service: ServiceSummary | None = None
    load: LoadProgress | None = None
    load_source: str = ""  # "console" (live tracker) or "log (N lines)"
    metrics: ServerMetrics | None = None
    benchmarks: tuple[BenchResult, ...] = ()
    bench_config_hash: str = ""
    capacity_searches: tuple[dict[str, Any], ...] = ()  # this host's, oldest first
    incidents: tuple[Incident, ...] = ()
    recorded: Any = None  # tui.summary.recorded.RecordedHistory, when the host has a recording
    plan: Plan | None = None
    chosen_layout: Layout | None = None
    files: tuple[tuple[str, str], ...] = ()
    hardware_health: HardwareHealth | None = None
    problems: tuple[str, ...] = ()
    last_load: dict[str, Any] | None = None  # the host's last explained load (loads.jsonl)
    timings_s: dict[str, float] = field(default_factory=dict, compare=False, hash=False)

    def to_plain(self) -> dict[str, Any]:
        """Plain JSON-ready data (dataclasses as dicts) for `servedeck summary --json`."""
        data = _plain(self)
        data["profile"] = {
            "name": self.profile.name,
            "route": self.profile.host.route,
            "model": _plain(self.profile.model),
            "handoff": _plain(self.profile.handoff),
        }
        return data
