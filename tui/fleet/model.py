"""One row per host of a fleet: the shape every fleet source fills and `fleet --json` prints.

The SSH fleet (one connection per host, the Deck's own sources) and the Prometheus fleet
(vector queries over dcgm-exporter, vLLM and servedeck exporter series) both yield
`FleetRow`s, so the Fleet pane and the JSON output have one code path. A value that is
not known is None ("n/a" on screen), never 0: a stale or missing series is not an idle GPU.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

FleetSource = Literal["ssh", "prometheus", "demo"]

# The JSON keys of `servedeck fleet --json`, in order (the CLI contract).
JSON_KEYS: tuple[str, ...] = (
    "host",
    "reachable",
    "unit_state",
    "phase",
    "shards_done",
    "shards_total",
    "eta_s",
    "health_ok",
    "progress",
    "progress_kind",
    "running",
    "waiting",
    "kv_pct",
    "gen_tok_s",
    "gpu_count",
    "gpu_mem_used_bytes",
    "gpu_mem_total_bytes",
    "gpu_util_pct_max",
    "temp_c_max",
    "power_w",
    "leftovers",
    "alerts",
    "error",
)


@dataclass(frozen=True)
class FleetRow:
    """What one host looks like now, as far as its source could tell."""

    host: str
    reachable: bool
    source: FleetSource = "ssh"
    label: str = ""
    route: str = ""  # the hop chain ("jump -> host"), for the hover text
    unit_state: str | None = None  # systemd ActiveState, None when unknown
    phase: str | None = None  # LoadProgress.phase: starting/weights/.../serving/failed
    shards_done: int | None = None
    shards_total: int | None = None
    eta_s: float | None = None  # "ready in about X", all remaining phases
    health_ok: bool | None = None
    # The engine's progress verdict (idle/serving/slow/stalled/unknown); None: not judged
    # (not serving, or no servedeck_engine_progress series). A stall's kind when known.
    progress: str | None = None
    progress_kind: str | None = None
    running: int | None = None
    waiting: int | None = None
    kv_pct: float | None = None
    gen_tok_s: float | None = None
    gpu_count: int | None = None
    gpu_mem_used_bytes: int | None = None
    gpu_mem_total_bytes: int | None = None
    gpu_mem_used_pct_max: float | None = None  # the fullest GPU
    gpu_util_pct_sum: float | None = None
    gpu_util_pct_max: float | None = None
    temp_c_max: float | None = None
    power_w: float | None = None
    leftovers: int | None = None
    alerts: tuple[str, ...] = ()
    error: str | None = None
    sample_age_s: float | None = None  # how old the newest figure is (stale scrapes)
    ttft_p50_s: float | None = None  # time to first token, recent requests (None: no traffic)
    ttft_p99_s: float | None = None
    taken_at_s: float = 0.0
    # Multi-node DP: the deployment this host belongs to and whether it runs headless ranks;
    # a deployment's group row (tui.fleet.deployments) names its members and those down.
    deployment: str | None = None
    headless: bool = False
    members: tuple[str, ...] = ()
    members_down: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The CLI contract's object (JSON_KEYS), plus `source`, `label` and the deployment."""
        values = dataclasses.asdict(self)
        out: dict[str, Any] = {key: values[key] for key in JSON_KEYS}
        out["alerts"] = list(self.alerts)
        out["source"] = self.source
        out["label"] = self.label
        out["deployment"] = self.deployment
        out["headless"] = self.headless
        return out
