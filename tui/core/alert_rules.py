"""Alert rules as a profile's `[[alerts]]` tables describe them, and the defaults.

A rule compares one signal (see SIGNALS) with a threshold; it fires once the
comparison has held for `for_s`, and resolves only when the value is back past the
threshold by `hysteresis`, so a value hovering at the threshold does not flap.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

SEVERITIES = ("info", "warning", "critical")
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
}
# The signals a rule can name; `gpu.*` ones are evaluated per GPU.
SIGNALS: dict[str, str] = {
    "gpu.temperature_c": "GPU temperature",
    "gpu.memory_used_pct": "GPU memory used, % of total",
    "gpu.utilization_pct": "GPU utilization",
    "gpu.power_w": "GPU power draw",
    "gpu.idle_allocated": "1 while a GPU holds memory (> 1 GiB) at 0 % utilization",
    "gpu.lost": "1 while a GPU is off the bus",
    "gpu.xid_recent": "XIDs the kernel logged for a GPU in the last 10 minutes",
    "gpu.xid_critical_recent": "XIDs that need a GPU reset or more (79, 48, 74, 95, ...) in the last 10 minutes",
    "engine.kv_cache_usage_pct": "KV cache usage",
    "engine.waiting_reqs": "requests waiting",
    "engine.running_reqs": "requests running",
    "engine.ready_lost": "1 while a server that was ready does not answer",
    "engine.stalled": "1 while requests wait and no token is generated ([service] stall_after_s)",
    "slo.ttft_p99_burn": "p99 TTFT over its SLO ([alerting.slo]; 1: at it), the lower of the short and long windows",
    "slo.itl_p99_burn": "p99 ITL over its SLO ([alerting.slo]; 1: at it), the lower of the short and long windows",
    "slo.e2e_p99_burn": "p99 E2E latency over its SLO ([alerting.slo]; 1: at it), the lower of the two windows",
    "slo.failed_burn": "aborted or errored requests over their SLO share ([alerting.slo] failed_pct), the lower of the two windows",
    "slo.preemptions": "preemptions in each of the short and long windows, the lower",
    "slo.queue_growth": "requests waiting added over each of the short and long windows, the lower",
    "unit.failed": "1 while the unit is failed or restarting",
    "procs.leftovers_while_inactive": "leftover GPU processes while the unit is inactive",
}


@dataclass(frozen=True, slots=True)
class AlertRule:
    name: str
    metric: str  # one of SIGNALS
    op: str  # one of OPERATORS
    threshold: float
    for_s: float = 0.0
    severity: str = "warning"
    hysteresis: float = 0.0
    message: str = ""

    def holds(self, value: float) -> bool:
        return OPERATORS[self.op](value, self.threshold)

    def cleared(self, value: float) -> bool:
        """True once the value is back past the threshold by the hysteresis."""
        if self.op in (">", ">="):
            return value < self.threshold - self.hysteresis or (
                self.hysteresis == 0 and not self.holds(value)
            )
        if self.op in ("<", "<="):
            return value > self.threshold + self.hysteresis or (
                self.hysteresis == 0 and not self.holds(value)
            )
        return not self.holds(value)

    @property
    def condition(self) -> str:
        return f"{self.metric} {self.op} {self.threshold:g}"


@dataclass(frozen=True, slots=True)
class WebhookConfig:
    url: str
    timeout_s: float = 5.0
    retries: int = 3
    backoff_s: float = 1.0


@dataclass(frozen=True, slots=True)
class RecordConfig:
    """The profile's `[record]` table: whether the console records, and for how long."""

    enabled: bool = True
    retention_days: float = 7.0


@dataclass(frozen=True, slots=True)
class LiveSlo:
    """`[alerting.slo]`: live-traffic SLO targets (0 switches one off) and the two windows a
    burn must hold over; TTFT and ITL default to `[benchmark.slo]`'s."""

    ttft_p99_ms: float = 2000.0
    itl_p99_ms: float = 100.0
    e2e_p99_ms: float = 0.0
    failed_pct: float = 5.0
    short_window_s: float = 60.0
    long_window_s: float = 300.0


@dataclass(frozen=True, slots=True)
class AlertingConfig:
    """The profile's `[alerting]` table plus its `[[alerts]]` rules."""

    rules: tuple[AlertRule, ...] = ()
    use_defaults: bool = True
    webhook: WebhookConfig | None = None
    bell: bool = True
    slo: LiveSlo = LiveSlo()

    def effective_rules(self) -> tuple[AlertRule, ...]:
        """The profile's rules; a default of the same name is replaced, not doubled."""
        if not self.use_defaults:
            return self.rules
        own = {rule.name for rule in self.rules}
        return tuple(rule for rule in DEFAULT_RULES if rule.name not in own) + self.rules


DEFAULT_RULES: tuple[AlertRule, ...] = (
    AlertRule("gpu-hot", "gpu.temperature_c", ">=", 85, 30, "warning", 5, "GPU running hot"),
    AlertRule(
        "gpu-idle-allocated",
        "gpu.idle_allocated",
        ">=",
        1,
        600,
        "warning",
        0,
        "GPU memory held with nothing running",
    ),
    AlertRule("kv-full", "engine.kv_cache_usage_pct", ">=", 95, 30, "warning", 5, "KV cache full"),
    AlertRule("queueing", "engine.waiting_reqs", ">", 0, 60, "warning", 0, "requests waiting"),
    AlertRule("unit-failed", "unit.failed", ">=", 1, 0, "critical", 0, "service failed"),
    AlertRule(
        "leftovers",
        "procs.leftovers_while_inactive",
        ">=",
        1,
        30,
        "warning",
        0,
        "leftover GPU processes while the service is stopped",
    ),
    AlertRule(
        "ready-lost", "engine.ready_lost", ">=", 1, 5, "critical", 0, "server stopped answering"
    ),
    AlertRule(
        "engine-stalled", "engine.stalled", ">=", 1, 0, "critical", 0, "engine makes no progress"
    ),
    AlertRule("slo-ttft", "slo.ttft_p99_burn", ">=", 1, 0, "warning", 0.1, "p99 TTFT over its SLO"),
    AlertRule("slo-itl", "slo.itl_p99_burn", ">=", 1, 0, "warning", 0.1, "p99 ITL over its SLO"),
    AlertRule("slo-e2e", "slo.e2e_p99_burn", ">=", 1, 0, "warning", 0.1, "p99 E2E over its SLO"),
    AlertRule(
        "slo-failed", "slo.failed_burn", ">=", 1, 0, "warning", 0.1, "requests failing over SLO"
    ),
    AlertRule("preempting", "slo.preemptions", ">=", 1, 0, "warning", 0, "engine preempting"),
    AlertRule("queue-growing", "slo.queue_growth", ">=", 5, 0, "warning", 4, "queue growing"),
    AlertRule("gpu-lost", "gpu.lost", ">=", 1, 0, "critical", 0, "GPU fell off the bus"),
    AlertRule("gpu-xid", "gpu.xid_recent", ">=", 1, 0, "warning", 0, "XID in the kernel log"),
    AlertRule(
        "gpu-xid-critical",
        "gpu.xid_critical_recent",
        ">=",
        1,
        0,
        "critical",
        0,
        "XID that needs a GPU reset or reboot",
    ),
)


# A rule's name is an alert id (`name:gpu3`), a mute key and a line of the Timeline.
RULE_NAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_. -]{0,62}[A-Za-z0-9_.-])?")
MAX_FOR_S = 7 * 86400.0  # a rule that must hold longer than a week never fires in practice
MAX_MESSAGE_CHARS = 200
WEBHOOK_TIMEOUT_S = (0.1, 60.0)  # one POST; the whole delivery has its own deadline


def parse_condition(text: str) -> tuple[str, float] | None:
    """`>= 95` -> ('>=', 95.0); None when it is not an operator and a finite number
    (`>= nan` never holds, `> inf` never fires, `1e400` is inf)."""
    text = text.strip()
    for op in sorted(OPERATORS, key=len, reverse=True):
        if text.startswith(op):
            try:
                threshold = float(text[len(op) :].strip())
            except ValueError:
                return None
            return (op, threshold) if math.isfinite(threshold) else None
    return None
