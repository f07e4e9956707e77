"""A profile's schema: one frozen dataclass per TOML table, with its defaults.

What a profile says, once validated; reading and checking it is in table.py,
sections.py, alert_tables.py and load.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tui.core.alert_rules import (
    AlertingConfig,
    RecordConfig,
)

ENGINES = ("vllm", "sglang")
HOST_KINDS = ("local", "ssh", "demo")
ENDPOINTS = ("completions", "chat")
ARRIVALS = ("poisson", "gamma")


@dataclass(frozen=True, slots=True)
class JumpHost:
    hostname: str
    port: int = 22
    user: str | None = None
    identity_file: str | None = None

    @property
    def label(self) -> str:
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port != 22 else ""
        return f"{user}{self.hostname}{port}"


@dataclass(frozen=True, slots=True)
class HostConfig:
    kind: str = "local"
    hostname: str | None = None
    port: int = 22
    user: str | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    jump: tuple[JumpHost, ...] = ()
    connect_timeout_s: float = 10.0
    keepalive_s: float = 15.0
    max_sessions: int = 8
    # An OpenSSH config alias (`ssh_alias = "kimi"`): what the profile leaves out is read
    # from ~/.ssh/config when the profile is loaded (tui.hosts.ssh_config).
    ssh_alias: str | None = None
    explicit_keys: tuple[str, ...] = ()  # [host] keys the profile gave itself (they win)
    origins: tuple[tuple[str, str], ...] = ()  # (key, where its value came from)
    ssh_known_hosts: tuple[str, ...] = ()  # UserKnownHostsFile from the ssh config
    alias_error: str | None = None  # the alias could not be read: every connect says why

    @property
    def label(self) -> str:
        if self.kind != "ssh":
            return self.kind
        if self.ssh_alias and self.hostname in (None, self.ssh_alias):
            return JumpHost(self.ssh_alias, self.port, self.user).label
        label = JumpHost(self.hostname or "?", self.port, self.user).label
        return f"{self.ssh_alias} ({label})" if self.ssh_alias else label

    @property
    def route(self) -> str:
        """`user@box via pve` style description, jump chain included."""
        if not self.jump:
            return self.label
        return f"{self.label} via {' -> '.join(hop.label for hop in self.jump)}"


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    engine: str = "vllm"
    unit: str | None = None
    log_file: str | None = None
    base_url: str = "http://127.0.0.1:8000"
    api_key_env: str | None = None
    python: str | None = None
    process_patterns: tuple[str, ...] = ("VLLM::*", "*vllm serve*", "*vllm.entrypoints*")
    use_sudo: bool = False
    # Variables the unit must set (CUDA/NCCL), checked by `servedeck doctor --unit`.
    unit_environment: tuple[str, ...] = ()
    # Requests running or waiting and no generated token this long: the engine is stalled.
    stall_after_s: float = 30.0

    @property
    def port(self) -> int:
        parts = urlsplit(self.base_url)
        if parts.port:
            return parts.port
        return 443 if parts.scheme == "https" else 80


@dataclass(frozen=True, slots=True)
class ModelConfig:
    name: str = ""
    path: str | None = None
    tp: int = 1
    ep: bool = False
    dp: int = 1
    pp: int = 1
    max_model_len: int | None = None
    checkpoint_gib: float | None = None
    notes: str = ""


@dataclass(frozen=True, slots=True)
class DeploymentConfig:
    """One deployment over several hosts (multi-node DP): the fleet shows its hosts as one.

    `headless`: this host runs only engine ranks (`vllm serve --headless`), no API server.
    """

    name: str | None = None
    headless: bool = False


@dataclass(frozen=True, slots=True)
class GpuConfig:
    refresh_s: float = 1.0


@dataclass(frozen=True, slots=True)
class BenchmarkPreset:
    name: str
    concurrency: tuple[int, ...] = (1,)
    input_tokens: int = 1024
    output_tokens: int = 256
    num_requests: int = 0  # 0: a sensible number for each concurrency level
    request_rate: tuple[float, ...] = ()  # requests/s; empty: closed loop
    arrival: str = "poisson"
    burstiness: float = 1.0
    endpoint: str = "completions"
    temperature: float = 0.0
    ignore_eos: bool = True
    warmup_requests: int = 1


def default_presets() -> dict[str, BenchmarkPreset]:
    """The presets every profile has unless it overrides them."""
    return {
        "quick": BenchmarkPreset("quick", (1,), 128, 128, 4),
        "sweep": BenchmarkPreset("sweep", (1, 8, 32, 64), 1024, 256),
        "prefill": BenchmarkPreset("prefill", (1,), 8192, 1, 4),
        "rate": BenchmarkPreset("rate", (256,), 1024, 256, 64, request_rate=(1.0, 4.0, 16.0)),
    }


@dataclass(frozen=True, slots=True)
class BenchmarkSlo:
    """`[benchmark.slo]`: what the capacity finder must hold (0 switches one off)."""

    ttft_p99_ms: float = 2000.0
    itl_p99_ms: float = 100.0
    min_user_tok_s: float = 20.0


# The latency percentiles a benchmark reports besides mean and median (vLLM's
# `--metric-percentiles`; its default is 99 alone, an operator's table wants the tail).
DEFAULT_PERCENTILES: tuple[float, ...] = (90.0, 95.0, 99.0)


def percentiles_problem(values: Sequence[float]) -> str | None:
    """Why a list of percentiles cannot be used (empty, or one outside 0..100), or None."""
    if not values:
        return "expected at least one percentile"
    bad = [value for value in values if not (math.isfinite(value) and 0 <= value <= 100)]
    return f"a percentile must be within 0..100, got {bad[0]:g}" if bad else None


@dataclass(frozen=True, slots=True)
class BenchmarkConfig:
    default_preset: str = "quick"
    presets: Mapping[str, BenchmarkPreset] = field(default_factory=default_presets)
    slo: BenchmarkSlo = field(default_factory=BenchmarkSlo)
    percentiles: tuple[float, ...] = DEFAULT_PERCENTILES


@dataclass(frozen=True, slots=True)
class HandoffNotes:
    goal: str = ""
    instructions: str = ""
    lessons: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    path: Path | None = None
    description: str = ""
    read_only: bool = False
    host: HostConfig = field(default_factory=HostConfig)
    service: ServiceConfig = field(default_factory=ServiceConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    deployment: DeploymentConfig = field(default_factory=DeploymentConfig)
    gpu: GpuConfig = field(default_factory=GpuConfig)
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    handoff: HandoffNotes = field(default_factory=HandoffNotes)
    keys: Mapping[str, str] = field(default_factory=dict)
    alerting: AlertingConfig = field(default_factory=AlertingConfig)
    record: RecordConfig = field(default_factory=RecordConfig)

    @property
    def is_demo(self) -> bool:
        return self.host.kind == "demo"

    @property
    def host_label(self) -> str:
        """The host's name in records, history and output: its route, or the simulator."""
        return "simulator" if self.is_demo else self.host.route
