"""Every message the console's workers post to the app, in one place.

Workers run off the UI thread's flow and hand their result back as one of these; the
app's handler for `Name` is `on_servedeck_app_<name>` (one namespace for all of them).
A worker's uncaught failure is tui.app.console_workers.WorkerFailed, posted by the
wrapper every worker goes through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from tui.gpu.model import GpuBoxSnapshot
from tui.hostfacts.hostinfo import HostOverview
from tui.procs import KillReport, ProcListing
from tui.serving.metrics import ServerMetrics
from tui.serving.progress.model import ProgressVerdict
from tui.serving.readiness import Readiness
from tui.serving.sleep import SleepOutcome
from tui.serving.unit.service import ActionOutcome, UnitState

if TYPE_CHECKING:  # the health checks load when the Health tab is first shown
    from tui.health.interconnect.rules import InterconnectReport
    from tui.health.report import HealthReport
    from tui.health.xid.decode import XidEvent
    from tui.health.xid.follow import FollowState
    from tui.plan.layout import Plan
    from tui.serving.load.live import LiveLoad
    from tui.tune.progress import TuneSnapshot

NAMESPACE = "servedeck_app"


@dataclass
class OverviewReady(Message, namespace=NAMESPACE):
    overview: HostOverview


@dataclass
class HostFailed(Message, namespace=NAMESPACE):
    message: str


@dataclass
class ServiceUpdate(Message, namespace=NAMESPACE):
    state: UnitState | None
    error: str | None = None


@dataclass
class ReadinessUpdate(Message, namespace=NAMESPACE):
    readiness: Readiness


@dataclass
class MetricsUpdate(Message, namespace=NAMESPACE):
    metrics: ServerMetrics | None
    error: str | None = None


@dataclass
class ProgressUpdate(Message, namespace=NAMESPACE):
    verdict: ProgressVerdict


@dataclass
class ProcsUpdate(Message, namespace=NAMESPACE):
    listing: ProcListing


@dataclass
class ActionDone(Message, namespace=NAMESPACE):
    verb: str
    outcome: ActionOutcome | None
    error: str | None = None


@dataclass
class SleepDone(Message, namespace=NAMESPACE):
    """A sleep or wake request's answer (Z/W)."""

    verb: str
    outcome: SleepOutcome | None
    error: str | None = None


@dataclass
class KillDone(Message, namespace=NAMESPACE):
    report: KillReport | None
    error: str | None = None
    listing: ProcListing | None = None  # from the kill's own final GPU re-check
    gpu: GpuBoxSnapshot | None = None  # that re-check


@dataclass
class BenchEvent(Message, namespace=NAMESPACE):
    event: object


@dataclass
class PlanReady(Message, namespace=NAMESPACE):
    plan: Plan | None
    error: str | None = None


@dataclass
class HealthReady(Message, namespace=NAMESPACE):
    interconnect: InterconnectReport | None
    health: HealthReport | None
    error: str | None = None


@dataclass
class HardwareCounters(Message, namespace=NAMESPACE):
    """GPU health counters read at start (no doctor): the badges' first data."""

    health: HealthReport


@dataclass
class XidSeen(Message, namespace=NAMESPACE):
    """One XID from the followed kernel log."""

    event: XidEvent


@dataclass
class KernelLogState(Message, namespace=NAMESPACE):
    """The XID follow started, ended or resumed."""

    state: FollowState


@dataclass
class ProbeChecked(Message, namespace=NAMESPACE):
    refusal: str | None
    gpus: int


@dataclass
class ProbeDone(Message, namespace=NAMESPACE):
    result: dict[str, object] | None
    error: str | None = None


@dataclass
class LoadLiveUpdate(Message, namespace=NAMESPACE):
    live: LiveLoad | None  # None: nothing to explain (no load, or the service stopped)


@dataclass
class TuneUpdate(Message, namespace=NAMESPACE):
    """The running tune's board (tui/app/console_tune.py), for the Tune view."""

    snapshot: TuneSnapshot
