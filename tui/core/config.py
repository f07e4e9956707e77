"""Profiles: TOML in (tomllib), validated frozen dataclasses out.

Every problem becomes one line naming the file, the key path and what was
expected; unknown keys are errors, so a typo never passes silently.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import stat
import threading
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tui.core.alert_rules import (
    MAX_FOR_S,
    MAX_MESSAGE_CHARS,
    RULE_NAME,
    SEVERITIES,
    SIGNALS,
    WEBHOOK_TIMEOUT_S,
    AlertingConfig,
    AlertRule,
    LiveSlo,
    RecordConfig,
    WebhookConfig,
)
from tui.core.alert_rules import parse_condition as parse_alert_condition
from tui.core.errors import ProfileError
from tui.core.keymap import BY_ID, LEGACY_IDS, current_id, own_keys
from tui.core.keynames import key_problem
from tui.core.redact import redact_text

ENGINES = ("vllm", "sglang")
HOST_KINDS = ("local", "ssh", "demo")
ENDPOINTS = ("completions", "chat")
ARRIVALS = ("poisson", "gamma")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DEPLOYMENT_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.@\\-]+\.(service|scope)$")
_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")
# A literal key pasted where the NAME of its environment variable belongs.
_LITERAL_SECRET = re.compile(r"^(?:hf_|sk-|sk_|ghp_|gho_|github_pat_|xox[abp]-|AKIA|eyJ)")
PROFILE_MAX_BYTES = 1024 * 1024
PROFILE_READ_TIMEOUT_S = 5.0


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


def _describe(value: Any) -> str:
    """A short, safe rendering of a wrong value (never a long string that may be a secret)."""
    if isinstance(value, str):
        shown = value if len(value) <= 24 else value[:8] + "..."
        return f"the string {redact_text(shown)!r}"  # `http://u:pw@h` must not echo pw
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


class _Table:
    """Reads one TOML table, remembering which keys were used and every problem met."""

    def __init__(self, data: Mapping[str, Any], key_path: str, problems: list[str]) -> None:
        self._data = data
        self._key_path = key_path
        self._problems = problems
        self._used: set[str] = set()

    def _where(self, key: str) -> str:
        return f"{self._key_path}.{key}" if self._key_path else key

    def where_of(self, key: str) -> str:
        """This table's path (`alerts[0]`), or a key's in it."""
        return self._where(key) if key else self._key_path

    def problem(self, key: str, message: str) -> None:
        self._problems.append(f"{self._where(key)}: {message}")

    def raw(self, key: str) -> Any:
        return self._data.get(key)

    def replace_last_problem(self, key: str, message: str) -> None:
        """Swap the generic message just recorded for `key` with a more helpful one."""
        prefix = f"{self._where(key)}: "
        for index in range(len(self._problems) - 1, -1, -1):
            if self._problems[index].startswith(prefix):
                self._problems[index] = prefix + message
                return
        self.problem(key, message)

    def _get(self, key: str) -> Any:
        self._used.add(key)
        return self._data.get(key)

    def string(
        self,
        key: str,
        default: str | None = None,
        *,
        choices: tuple[str, ...] = (),
        pattern: re.Pattern[str] | None = None,
        expected: str = "a string",
        secret: bool = False,
    ) -> str | None:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.problem(key, f"expected {expected}, got {_describe(value)}")
            return default
        if choices and value not in choices:
            options = ", ".join(repr(choice) for choice in choices)
            self.problem(key, f"expected one of {options}, got {_describe(value)}")
            return default
        if pattern is not None and not pattern.fullmatch(value):
            got = "a value that does not match" if secret else _describe(value)
            self.problem(key, f"expected {expected}, got {got}")
            return default
        return value

    def number(
        self,
        key: str,
        default: float | None,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        integer: bool = False,
    ) -> Any:
        value = self._get(key)
        if value is None:
            return default
        kind = "an integer" if integer else "a number"
        bad_type = isinstance(value, bool) or not isinstance(value, int | float)
        if integer and isinstance(value, float):
            bad_type = True
        limits = ""
        if minimum is not None and maximum is not None:
            limits = f" from {minimum:g} to {maximum:g}"
        elif minimum is not None:
            limits = f" >= {minimum:g}"
        if bad_type:
            self.problem(key, f"expected {kind}{limits}, got {_describe(value)}")
            return default
        if not math.isfinite(value):
            self.problem(key, f"expected {kind}{limits}, got {value} (not a finite number)")
            return default
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            self.problem(key, f"expected {kind}{limits}, got {value}")
            return default
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problem(key, f"expected true or false, got {_describe(value)}")
            return default
        return value

    def strings(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, str):
            return (value,)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.problem(key, f"expected an array of strings, got {_describe(value)}")
            return default
        return tuple(value)

    def numbers(
        self, key: str, default: tuple[Any, ...], *, integer: bool, minimum: float
    ) -> tuple[Any, ...]:
        value = self._get(key)
        if value is None:
            return default
        items = value if isinstance(value, list) else [value]
        kind = "integers" if integer else "numbers"
        for item in items:
            ok_type = isinstance(item, int) if integer else isinstance(item, int | float)
            if isinstance(item, bool) or not ok_type or not math.isfinite(item) or item < minimum:
                self.problem(
                    key, f"expected an array of {kind} >= {minimum:g}, got {_describe(value)}"
                )
                return default
        return tuple(items)

    def table(self, key: str) -> _Table:
        value = self._get(key)
        if value is None:
            value = {}
        elif not isinstance(value, dict):
            self.problem(key, f"expected a table ([{self._where(key)}]), got {_describe(value)}")
            value = {}
        return _Table(value, self._where(key), self._problems)

    def tables(self, key: str) -> list[_Table]:
        value = self._get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            self.problem(
                key, f"expected an array of tables ([[{self._where(key)}]]), got {_describe(value)}"
            )
            return []
        return [
            _Table(item, f"{self._where(key)}[{i}]", self._problems) for i, item in enumerate(value)
        ]

    def has(self, key: str) -> bool:
        return key in self._data

    def key_names(self) -> list[str]:
        self._used.update(self._data)
        return list(self._data)

    def finish(self) -> None:
        """Report every key nobody asked for, with the closest known key as a hint."""
        for key in self._data:
            if key in self._used:
                continue
            close = difflib.get_close_matches(key, sorted(self._used), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.problem(key, f"unknown key{hint}")


TomlTable = _Table  # the public name, for other servedeck TOML files (fleet groups)

_ALIAS_KEYS = ("hostname", "port", "user", "identity_file", "known_hosts", "jump")
_ALIAS_NAME = re.compile(r"^[A-Za-z0-9_.@:%+-][A-Za-z0-9_.@:%+\[\]-]*$")


def _host(table: _Table) -> HostConfig:
    alias = table.string(
        "ssh_alias", pattern=_ALIAS_NAME, expected="a Host name from ~/.ssh/config"
    )
    kind = table.string("kind", "ssh" if alias else "local", choices=HOST_KINDS) or "local"
    if alias and kind != "ssh":
        table.problem("ssh_alias", f'needs kind = "ssh" (or no kind key), got kind = "{kind}"')
    jumps = []
    for hop in table.tables("jump"):
        jumps.append(
            JumpHost(
                hostname=hop.string("hostname", "") or "",
                port=hop.number("port", 22, minimum=1, maximum=65535, integer=True),
                user=hop.string("user"),
                identity_file=hop.string("identity_file"),
            )
        )
        if not jumps[-1].hostname:
            hop.problem("hostname", "expected the jump host's name or address")
        hop.finish()
    config = HostConfig(
        kind=kind,
        hostname=table.string("hostname"),
        port=table.number("port", 22, minimum=1, maximum=65535, integer=True),
        user=table.string("user"),
        identity_file=table.string("identity_file"),
        known_hosts=table.string("known_hosts"),
        jump=tuple(jumps),
        connect_timeout_s=table.number("connect_timeout_s", 10.0, minimum=1, maximum=300),
        keepalive_s=table.number("keepalive_s", 15.0, minimum=0, maximum=3600),
        max_sessions=table.number("max_sessions", 8, minimum=1, maximum=64, integer=True),
        ssh_alias=alias,
        explicit_keys=tuple(
            key for key in (*_ALIAS_KEYS, "connect_timeout_s") if alias and table.has(key)
        ),
    )
    if kind == "ssh" and not config.hostname and not alias:
        table.problem(
            "hostname", 'expected a host name or address (or ssh_alias) when kind = "ssh"'
        )
    _check_jump_chain(table, config)
    table.finish()
    return config


def _check_jump_chain(table: _Table, config: HostConfig) -> None:
    """A jump chain is non-empty when given and never visits the same host twice."""
    if table.has("jump") and not config.jump:
        table.problem("jump", "expected at least one [[host.jump]] hop (or no jump key at all)")
        return
    seen: set[tuple[str, int]] = set()
    if config.hostname:
        seen.add((config.hostname.lower(), config.port))
    for index, hop in enumerate(config.jump):
        where = (hop.hostname.lower(), hop.port)
        if hop.hostname and where in seen:
            table.problem(
                f"jump[{index}]", f"the chain loops: {hop.label} appears twice (or is the target)"
            )
        seen.add(where)


def _service(table: _Table) -> ServiceConfig:
    defaults = ServiceConfig()
    config = ServiceConfig(
        engine=table.string("engine", "vllm", choices=ENGINES) or "vllm",
        unit=table.string(
            "unit", pattern=_UNIT_NAME, expected="a systemd unit name ending in .service"
        ),
        log_file=table.string("log_file"),
        base_url=table.string("base_url", defaults.base_url) or defaults.base_url,
        api_key_env=table.string(
            "api_key_env",
            pattern=_ENV_NAME,
            expected="the NAME of an environment variable holding the key, never the key itself",
            secret=True,
        ),
        python=table.string("python"),
        process_patterns=table.strings("process_patterns", defaults.process_patterns),
        use_sudo=table.boolean("use_sudo", False),
        unit_environment=table.strings("unit_environment", ()),
        stall_after_s=table.number("stall_after_s", 30.0, minimum=2, maximum=3600) or 30.0,
    )
    parts = urlsplit(config.base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        table.problem(
            "base_url", f"expected an http:// or https:// URL, got {_describe(config.base_url)}"
        )
    else:
        try:
            port = parts.port
        except ValueError:
            port = -1
        if port is not None and not 1 <= port <= 65535:
            table.problem("base_url", "expected a port from 1 to 65535 in the URL")
    raw = table.raw("api_key_env")
    if isinstance(raw, str) and _looks_like_literal_secret(raw):
        config = replace(config, api_key_env=None)
        table.replace_last_problem(
            "api_key_env",
            "expected the NAME of an environment variable, but this looks like a "
            "secret; give the NAME of an environment variable that holds it "
            "(e.g. VLLM_API_KEY), never the key itself",
        )
    table.finish()
    return config


def _looks_like_literal_secret(value: str) -> bool:
    """A key's own shape (`hf_...`, `sk-...`) or a long mixed-case random string, not a NAME."""
    value = value.strip()
    if _LITERAL_SECRET.match(value):
        return True
    mixed = any(c.islower() for c in value) and any(c.isdigit() for c in value)
    return len(value) >= 32 and mixed and " " not in value


def _model(table: _Table) -> ModelConfig:
    config = ModelConfig(
        name=table.string("name", "") or "",
        path=table.string("path"),
        tp=table.number("tp", 1, minimum=1, maximum=1024, integer=True),
        ep=table.boolean("ep", False),
        dp=table.number("dp", 1, minimum=1, maximum=1024, integer=True),
        pp=table.number("pp", 1, minimum=1, maximum=1024, integer=True),
        max_model_len=table.number("max_model_len", None, minimum=1, integer=True),
        checkpoint_gib=table.number("checkpoint_gib", None, minimum=0),
        notes=table.string("notes", "") or "",
    )
    table.finish()
    return config


def _deployment(table: _Table) -> DeploymentConfig:
    config = DeploymentConfig(
        name=table.string(
            "name",
            pattern=_DEPLOYMENT_NAME,
            expected="a name of letters, digits, . _ - (64 at most)",
        ),
        headless=table.boolean("headless", False),
    )
    if config.headless and not config.name:
        table.problem("headless", "a headless host belongs to a deployment: give its name")
    table.finish()
    return config


def _gpu(table: _Table) -> GpuConfig:
    config = GpuConfig(refresh_s=table.number("refresh_s", 1.0, minimum=0.25, maximum=10))
    table.finish()
    return config


def _preset(name: str, table: _Table, base: BenchmarkPreset | None) -> BenchmarkPreset:
    base = base or BenchmarkPreset(name)
    preset = BenchmarkPreset(
        name=name,
        concurrency=table.numbers("concurrency", base.concurrency, integer=True, minimum=1),
        input_tokens=table.number("input_tokens", base.input_tokens, minimum=1, integer=True),
        output_tokens=table.number("output_tokens", base.output_tokens, minimum=1, integer=True),
        num_requests=table.number("num_requests", base.num_requests, minimum=0, integer=True),
        request_rate=table.numbers("request_rate", base.request_rate, integer=False, minimum=0),
        arrival=table.string("arrival", base.arrival, choices=ARRIVALS) or base.arrival,
        burstiness=table.number("burstiness", base.burstiness, minimum=0.01),
        endpoint=table.string("endpoint", base.endpoint, choices=ENDPOINTS) or base.endpoint,
        temperature=table.number("temperature", base.temperature, minimum=0, maximum=2),
        ignore_eos=table.boolean("ignore_eos", base.ignore_eos),
        warmup_requests=table.number(
            "warmup_requests", base.warmup_requests, minimum=0, integer=True
        ),
    )
    table.finish()
    return preset


def _benchmark(table: _Table) -> BenchmarkConfig:
    presets = dict(default_presets())
    presets_table = table.table("presets")
    for name in presets_table.key_names():
        presets[name] = _preset(name, presets_table.table(name), presets.get(name))
    default = table.string("default_preset", "quick") or "quick"
    if default not in presets:
        table.problem(
            "default_preset", f"expected one of the presets {sorted(presets)}, got {default!r}"
        )
        default = "quick"
    slo_table, base = table.table("slo"), BenchmarkSlo()
    slo = BenchmarkSlo(
        **{f.name: slo_table.number(f.name, getattr(base, f.name), minimum=0) for f in fields(base)}
    )
    slo_table.finish()
    asked = table.numbers("percentiles", DEFAULT_PERCENTILES, integer=False, minimum=0)
    problem = percentiles_problem(asked)
    if problem:
        table.problem("percentiles", problem)
    percentiles = DEFAULT_PERCENTILES if problem else tuple(sorted({float(p) for p in asked}))
    table.finish()
    return BenchmarkConfig(
        default_preset=default, presets=presets, slo=slo, percentiles=percentiles
    )


def _handoff(table: _Table) -> HandoffNotes:
    notes = HandoffNotes(
        goal=table.string("goal", "") or "",
        instructions=table.string("instructions", "") or "",
        lessons=table.strings("lessons"),
        next_steps=table.strings("next_steps"),
    )
    table.finish()
    return notes


def keys_from(table: _Table, prefix: str = "") -> dict[str, str]:
    """Remaps by binding id; an unknown id or key name is an error, like any unknown key.

    TOML reads `service.stop = "ctrl+x"` as a table `service` holding `stop`: a table is
    read as the ids under its name, so the id is written plain or quoted alike. An id of
    an earlier release (`service-stop`) is read as today's.
    """
    candidates = sorted({*BY_ID, *LEGACY_IDS})
    keymap: dict[str, str] = {}
    for name in table.key_names():
        if isinstance(table.raw(name), dict):
            keymap |= keys_from(table.table(name), f"{prefix}{name}.")
            continue
        value = table.string(name, expected="a key name such as 'ctrl+k'")
        binding_id = current_id(prefix + name)
        if binding_id not in BY_ID:
            close = difflib.get_close_matches(prefix + name, candidates, n=1, cutoff=0.6)
            hint = f" (did you mean {current_id(close[0])!r}?)" if close else ""
            table.problem(name, f"unknown binding id{hint}")
            continue
        if value:
            problem = key_problem(value, own_keys(binding_id))
            if problem:
                table.problem(name, problem)
                continue
            keymap[binding_id] = value
    return keymap


def _alert_rule(table: _Table, seen: dict[str, str]) -> AlertRule | None:
    """One `[[alerts]]` table; a rule that could never fire, or would shadow another of
    the same name, is refused with its key named rather than kept or dropped silently."""
    name = table.string(
        "name",
        pattern=RULE_NAME,
        expected="a name of letters, digits, '_', '.', '-', inner spaces (at most 64)",
    )
    metric = table.string("metric", choices=tuple(SIGNALS))
    condition_text = table.string("condition", expected="an operator and a number, like '>= 95'")
    rule = None
    if name is None and table.raw("name") is None:
        table.problem("name", "missing (every alert needs a name)")
    elif name is not None and name in seen:
        table.problem("name", f"{name!r} is already the name of {seen[name]}")
        name = None
    elif name is not None:
        seen[name] = table.where_of("")
    if not metric and table.string("metric") is None:
        table.problem("metric", f"missing; one of {', '.join(SIGNALS)}")
    condition = parse_alert_condition(condition_text) if condition_text is not None else None
    if condition_text is None:
        if table.raw("condition") is None:
            table.problem("condition", "missing (like '>= 95')")
    elif condition is None:
        table.problem(
            "condition",
            "expected an operator and a finite number, like '>= 95', "
            f"got {_describe(condition_text)}",
        )
    for_s = table.number("for_s", 0.0, minimum=0, maximum=MAX_FOR_S)
    hysteresis = table.number("hysteresis", 0.0, minimum=0)
    severity = table.string("severity", "warning", choices=SEVERITIES) or "warning"
    message = table.string(
        "message",
        "",
        pattern=re.compile(rf"[^\x00-\x1f\x7f]{{0,{MAX_MESSAGE_CHARS}}}"),
        expected=f"one line of at most {MAX_MESSAGE_CHARS} characters",
    )
    if name and metric and condition:
        rule = AlertRule(
            name=name,
            metric=metric,
            op=condition[0],
            threshold=condition[1],
            for_s=for_s,
            severity=severity,
            hysteresis=hysteresis,
            message=message or "",
        )
    table.finish()
    return rule


def _record(table: _Table) -> RecordConfig:
    config = RecordConfig(
        enabled=table.boolean("enabled", True),
        retention_days=table.number("retention_days", 7.0, minimum=1, maximum=366),
    )
    table.finish()
    return config


def _live_slo(table: _Table, benchmark: BenchmarkSlo) -> LiveSlo:
    """`[alerting.slo]`; TTFT and ITL targets default to `[benchmark.slo]`'s."""
    base = replace(LiveSlo(), ttft_p99_ms=benchmark.ttft_p99_ms, itl_p99_ms=benchmark.itl_p99_ms)
    low, high = 1.0, 86400.0  # a window, in seconds: a second to a day
    slo = LiveSlo(
        ttft_p99_ms=table.number("ttft_p99_ms", base.ttft_p99_ms, minimum=0),
        itl_p99_ms=table.number("itl_p99_ms", base.itl_p99_ms, minimum=0),
        e2e_p99_ms=table.number("e2e_p99_ms", base.e2e_p99_ms, minimum=0),
        failed_pct=table.number("failed_pct", base.failed_pct, minimum=0, maximum=100),
        short_window_s=table.number(
            "short_window_s", base.short_window_s, minimum=low, maximum=high
        ),
        long_window_s=table.number("long_window_s", base.long_window_s, minimum=low, maximum=high),
    )
    if slo.long_window_s <= slo.short_window_s:
        table.problem(
            "long_window_s",
            f"must be longer than short_window_s ({slo.short_window_s:g}), "
            f"got {slo.long_window_s:g}",
        )
        slo = replace(slo, long_window_s=base.long_window_s, short_window_s=base.short_window_s)
    table.finish()
    return slo


def _alerting(table: _Table, rules: list[_Table], benchmark: BenchmarkSlo) -> AlertingConfig:
    url = table.string(
        "webhook_url", pattern=re.compile(r"^https?://\S+$"), expected="an http(s) URL", secret=True
    )
    webhook = None
    if url:
        webhook = WebhookConfig(
            url=url,
            timeout_s=table.number(
                "webhook_timeout_s",
                5.0,
                minimum=WEBHOOK_TIMEOUT_S[0],
                maximum=WEBHOOK_TIMEOUT_S[1],
            ),
            retries=table.number("webhook_retries", 3, minimum=0, maximum=10, integer=True),
        )
    seen: dict[str, str] = {}
    parsed = tuple(rule for rule in (_alert_rule(item, seen) for item in rules) if rule is not None)
    config = AlertingConfig(
        rules=parsed,
        use_defaults=table.boolean("defaults", True),
        webhook=webhook,
        bell=table.boolean("bell", True),
        slo=_live_slo(table.table("slo"), benchmark),
    )
    table.finish()
    return config


def profile_from_data(
    data: Mapping[str, Any], name: str, path: Path | None
) -> tuple[Profile, list[str]]:
    """Build a Profile; returns it with the list of problems (empty when valid)."""
    problems: list[str] = []
    root = _Table(data, "", problems)
    section: Callable[[str], _Table] = root.table
    benchmark = _benchmark(section("benchmark"))
    profile = Profile(
        name=root.string("name", name) or name,
        path=path,
        description=root.string("description", "") or "",
        read_only=root.boolean("read_only", False),
        host=_host(section("host")),
        service=_service(section("service")),
        model=_model(section("model")),
        deployment=_deployment(section("deployment")),
        gpu=_gpu(section("gpu")),
        benchmark=benchmark,
        handoff=_handoff(section("handoff")),
        keys=keys_from(section("keys")),
        alerting=_alerting(section("alerting"), root.tables("alerts"), benchmark.slo),
        record=_record(section("record")),
    )
    root.finish()
    return profile, problems


def parse_toml(text: str, path: Path) -> dict[str, Any]:
    """tomllib with the error turned into `file:line:column: message`."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ProfileError(f"{path}: TOML nested too deeply to read") from None
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        position = _TOML_POSITION.search(message)
        if position:
            line, column = position.groups()
            message = _TOML_POSITION.sub("", message).strip()
        elif "(at end of document)" in message:
            lines = text.split("\n")
            line, column = str(len(lines)), str(len(lines[-1]) + 1)
            message = message.replace("(at end of document)", "at end of file").strip()
        else:
            raise ProfileError(f"{path}: TOML syntax error: {message}") from None
        raise ProfileError(f"{path}:{line}:{column}: TOML syntax error: {message}") from None


def read_profile_bytes(
    path: Path,
    max_bytes: int = PROFILE_MAX_BYTES,
    timeout_s: float = PROFILE_READ_TIMEOUT_S,
) -> bytes:
    """A profile's bytes: a regular file under `max_bytes`, read within `timeout_s`.

    Opened non-blocking and checked with fstat before any read, so a FIFO, a
    device such as /dev/zero or a directory is refused at once instead of
    hanging or filling memory; the read itself runs in a daemon thread so a
    stuck filesystem cannot hold the console past the timeout.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ProfileError(f"{path}: is a directory, expected a .toml file") from None
    except OSError as error:
        raise ProfileError(f"{path}: cannot read: {error.strerror}") from None
    reader: threading.Thread | None = None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ProfileError(f"{path}: is a directory, expected a .toml file")
        if not stat.S_ISREG(info.st_mode):
            raise ProfileError(f"{path}: not a regular file (a FIFO, socket or device)")
        if info.st_size > max_bytes:
            raise ProfileError(
                f"{path}: {info.st_size} bytes, over the {max_bytes // 1024} KiB profile limit"
            )
        result: list[bytes | OSError] = []

        def read() -> None:
            try:
                result.append(os.read(fd, max_bytes + 1))
            except OSError as error:
                result.append(error)

        reader = threading.Thread(target=read, name="profile-read", daemon=True)
        reader.start()
        reader.join(timeout_s)
        if not result:
            raise ProfileError(f"{path}: reading took over {timeout_s:g} s; gave up")
        data = result[0]
        if isinstance(data, OSError):
            raise ProfileError(f"{path}: cannot read: {data.strerror}")
        if len(data) > max_bytes:
            raise ProfileError(f"{path}: over the {max_bytes // 1024} KiB profile limit")
        return data
    finally:
        if reader is None or not reader.is_alive():
            os.close(fd)  # a timed-out reader still holds it: left to that thread


def profile_problems(path: Path) -> tuple[Profile | None, list[str]]:
    """Read and validate one profile file; every problem is a full one-line message."""
    try:
        raw = read_profile_bytes(path)
    except ProfileError as error:
        return None, [str(error)]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, [f"{path}: not UTF-8 text (byte {error.start})"]
    try:
        data = parse_toml(text, path)
        profile, problems = profile_from_data(data, path.stem, path)
    except ProfileError as error:
        return None, [str(error)]
    except (RecursionError, MemoryError, ValueError, TypeError) as error:
        return None, [f"{path}: cannot read this profile ({type(error).__name__})"]
    return (None if problems else profile), [f"{path}: {problem}" for problem in problems]


def load_profile_file(path: Path) -> Profile:
    """A valid Profile, or ProfileError naming the first problem (and how many more).

    Its `ssh_alias` is not looked up here (the core reads no ~/.ssh/config):
    `tui.hosts.profiles.load_profile_file` is this plus the alias's route.
    """
    profile, problems = profile_problems(path)
    if problems:
        more = f" (and {len(problems) - 1} more problem(s); run `servedeck profiles check {path}`)"
        raise ProfileError(problems[0] + (more if len(problems) > 1 else ""))
    assert profile is not None
    return profile  # an `ssh_alias` is resolved above the core: tui.hosts.profiles


def demo_profile(read_only: bool = False) -> Profile:
    """The built-in simulator profile, usable with no files at all."""
    return Profile(
        name="demo",
        description="Simulated 8-GPU box serving Kimi-K2.5 INT4 (no GPU needed)",
        read_only=read_only,
        host=HostConfig(kind="demo"),
        service=ServiceConfig(engine="vllm", unit="vllm-kimi-k25-int4.service"),
        model=ModelConfig(name="moonshotai/Kimi-K2.5", path="/models/Kimi-K2.5-INT4", tp=8),
        handoff=HandoffNotes(
            goal="Serve Kimi-K2.5 INT4 on 8 GPUs (TP=8); measure single-stream and batch speed.",
            lessons=("vLLM workers survive a stop and hold GPU memory: check the Processes pane.",),
            next_steps=("Try expert parallel (TP=8 + EP) and compare the sweep.",),
        ),
    )
