"""The profile's tables read and checked: host, service, model, GPU, benchmark, handoff, keys.

Each reader takes the table's `TomlTable` and returns its frozen dataclass; each
problem names its key (the table collects them).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import fields, replace
from urllib.parse import urlsplit

from tui.core.config.schema import (
    ARRIVALS,
    DEFAULT_PERCENTILES,
    ENDPOINTS,
    ENGINES,
    HOST_KINDS,
    BenchmarkConfig,
    BenchmarkPreset,
    BenchmarkSlo,
    DeploymentConfig,
    GpuConfig,
    HandoffNotes,
    HostConfig,
    JumpHost,
    ModelConfig,
    ServiceConfig,
    default_presets,
    percentiles_problem,
)
from tui.core.config.table import TomlTable, describe_value
from tui.core.keymap import BY_ID, LEGACY_IDS, current_id, own_keys
from tui.core.keynames import key_problem

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DEPLOYMENT_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.@\\-]+\.(service|scope)$")
# A literal key pasted where the NAME of its environment variable belongs.
_LITERAL_SECRET = re.compile(r"^(?:hf_|sk-|sk_|ghp_|gho_|github_pat_|xox[abp]-|AKIA|eyJ)")
_ALIAS_KEYS = ("hostname", "port", "user", "identity_file", "known_hosts", "jump")
_ALIAS_NAME = re.compile(r"^[A-Za-z0-9_.@:%+-][A-Za-z0-9_.@:%+\[\]-]*$")


def host_config(table: TomlTable) -> HostConfig:
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


def _check_jump_chain(table: TomlTable, config: HostConfig) -> None:
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


def service_config(table: TomlTable) -> ServiceConfig:
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
            "base_url",
            f"expected an http:// or https:// URL, got {describe_value(config.base_url)}",
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


def model_config(table: TomlTable) -> ModelConfig:
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


def deployment_config(table: TomlTable) -> DeploymentConfig:
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


def gpu_config(table: TomlTable) -> GpuConfig:
    config = GpuConfig(refresh_s=table.number("refresh_s", 1.0, minimum=0.25, maximum=10))
    table.finish()
    return config


def _preset(name: str, table: TomlTable, base: BenchmarkPreset | None) -> BenchmarkPreset:
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


def benchmark_config(table: TomlTable) -> BenchmarkConfig:
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


def handoff_notes(table: TomlTable) -> HandoffNotes:
    notes = HandoffNotes(
        goal=table.string("goal", "") or "",
        instructions=table.string("instructions", "") or "",
        lessons=table.strings("lessons"),
        next_steps=table.strings("next_steps"),
    )
    table.finish()
    return notes


def keys_from(table: TomlTable, prefix: str = "") -> dict[str, str]:
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
