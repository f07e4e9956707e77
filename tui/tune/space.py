"""`tune.toml`: the space of serving configurations an experiment tries, and what it optimises.

A configuration is a set of flags and environment for the profile's unit (and, at
most, another model path). The space is a `[grid]` (every combination) and/or a list
of `[[config]]` tables; `[tune]` names the objective, the time budget and each
configuration's deadline. Every bad value is refused in one line naming the file and
the field, before anything starts.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui.core.config import parse_toml
from tui.core.errors import ServedeckError
from tui.plan.layout import KV_DTYPES

FlagValue = str | int | float | bool

OBJECTIVES = ("capacity", "single_stream", "tok_per_gpu")
INT_FLAGS = frozenset(
    (
        "--tensor-parallel-size",
        "--pipeline-parallel-size",
        "--data-parallel-size",
        "--max-num-seqs",
        "--max-num-batched-tokens",
        "--max-model-len",
    )
)
BOOL_FLAGS = frozenset(
    ("--enable-expert-parallel", "--enable-prefix-caching", "--enable-chunked-prefill")
)
# The tune owns these: the profile's port and address must not move under the console.
MANAGED_FLAGS = frozenset(("--port", "--host"))
MAX_CONFIGS = 256
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*\Z")


class TuneSpaceError(ServedeckError):
    """A tune.toml the experiment cannot run: one line naming the file and the field."""


@dataclass(frozen=True, slots=True)
class TuneConfig:
    """One point of the space: flags (sorted by name), environment and model path."""

    name: str
    flags: tuple[tuple[str, FlagValue], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    model: str | None = None

    def flag(self, name: str) -> FlagValue | None:
        return dict(self.flags).get(name)

    @property
    def key(self) -> str:
        """Stable identity of what is set (the name excluded): resume matches on it."""
        body = json.dumps([self.flags, self.env, self.model], sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class TuneSpace:
    """A whole tune.toml: the configurations in file order and the experiment's limits."""

    path: str
    objective: str
    budget_s: float
    deadline_s: float
    configs: tuple[TuneConfig, ...]
    input_tokens: int = 512
    output_tokens: int = 128


def _where(path: Path, table: str, field: str) -> str:
    return f"{path}: {table} {field!r}" if field else f"{path}: {table}"


def _flag_value(value: Any, flag: str, where: str) -> FlagValue:
    """One flag's value, checked against what vLLM accepts for it."""
    if flag in BOOL_FLAGS:
        if not isinstance(value, bool):
            raise TuneSpaceError(f"{where}: expected true or false, got {value!r}")
        return value
    if flag in INT_FLAGS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TuneSpaceError(f"{where}: expected a whole number >= 1, got {value!r}")
        return value
    if flag == "--gpu-memory-utilization":
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
            raise TuneSpaceError(f"{where}: expected a fraction in (0, 1], got {value!r}")
        return float(value)
    if flag == "--kv-cache-dtype":
        if value not in KV_DTYPES:
            raise TuneSpaceError(f"{where}: expected one of {', '.join(KV_DTYPES)}, got {value!r}")
        return str(value)
    if isinstance(value, str | int | float | bool) and str(value).strip():
        return value
    raise TuneSpaceError(f"{where}: expected a text, number or true/false, got {value!r}")


def _check_flag(flag: str, where: str) -> None:
    if not _FLAG.match(flag):
        raise TuneSpaceError(f"{where}: not a long flag (--name) nor model or env")
    if flag in MANAGED_FLAGS:
        raise TuneSpaceError(f"{where}: the profile's {flag} stays as it is; remove it")


def _env_value(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise TuneSpaceError(f"{where}: expected a text or number, got {value!r}")
    return str(value)


def _name(flags: Mapping[str, FlagValue], env: Mapping[str, str], model: str | None) -> str:
    """`tp=8 ep max-num-seqs=64`: what the configuration sets, in a few words."""
    words = []
    for flag, value in sorted(flags.items()):
        short = flag.removeprefix("--").replace("tensor-parallel-size", "tp")
        short = short.replace("enable-expert-parallel", "ep")
        short = short.replace("enable-prefix-caching", "prefix-caching")
        if value is True:
            words.append(short)
        elif value is False:
            words.append(f"no-{short}")
        else:
            words.append(f"{short}={value}")
    words += [f"{name}={value}" for name, value in sorted(env.items())]
    if model:
        words.append(f"model={model}")
    return " ".join(words) or "as the unit is"


def _config(
    flags: Mapping[str, FlagValue], env: Mapping[str, str], model: str | None, name: str | None
) -> TuneConfig:
    return TuneConfig(
        name=name or _name(flags, env, model),
        flags=tuple(sorted(flags.items())),
        env=tuple(sorted(env.items())),
        model=model,
    )


def _grid(path: Path, grid: Any) -> list[TuneConfig]:
    if not isinstance(grid, dict):
        raise TuneSpaceError(f"{path}: [grid] must be a table")
    axes: list[tuple[str, str, list[Any]]] = []  # (kind, name, values)
    for key, values in grid.items():
        if key == "env":
            if not isinstance(values, dict):
                raise TuneSpaceError(f"{_where(path, '[grid]', 'env')}: must be a table")
            for name, choices in values.items():
                where = _where(path, "[grid.env]", name)
                if not _ENV_NAME.match(name):
                    raise TuneSpaceError(f"{where}: not an environment variable name")
                if not isinstance(choices, list) or not choices:
                    raise TuneSpaceError(f"{where}: expected a non-empty list of values")
                axes.append(("env", name, [_env_value(v, where) for v in choices]))
            continue
        where = _where(path, "[grid]", key)
        if not isinstance(values, list) or not values:
            raise TuneSpaceError(f"{where}: expected a non-empty list of values")
        if key == "model":
            axes.append(("model", key, [_env_value(v, where) for v in values]))
            continue
        _check_flag(key, where)
        axes.append(("flag", key, [_flag_value(v, key, where) for v in values]))
    configs = []
    for combination in itertools.product(*(values for _, _, values in axes)):
        flags: dict[str, FlagValue] = {}
        env: dict[str, str] = {}
        model = None
        for (kind, name, _), value in zip(axes, combination, strict=True):
            if kind == "flag":
                flags[name] = value
            elif kind == "env":
                env[name] = str(value)
            else:
                model = str(value)
        configs.append(_config(flags, env, model, None))
    return configs


def _listed(path: Path, entries: Any) -> list[TuneConfig]:
    if not isinstance(entries, list):
        raise TuneSpaceError(f"{path}: config must be a list of tables ([[config]])")
    configs = []
    for index, entry in enumerate(entries, 1):
        table = f"[[config]] #{index}"
        if not isinstance(entry, dict):
            raise TuneSpaceError(f"{path}: {table}: must be a table")
        flags: dict[str, FlagValue] = {}
        env: dict[str, str] = {}
        model = name = None
        for key, value in entry.items():
            where = _where(path, table, key)
            if key == "name":
                name = _env_value(value, where)
            elif key == "model":
                model = _env_value(value, where)
            elif key == "env":
                if not isinstance(value, dict):
                    raise TuneSpaceError(f"{where}: must be a table of NAME = value")
                for env_name, env_value in value.items():
                    env_where = _where(path, f"{table} env", env_name)
                    if not _ENV_NAME.match(env_name):
                        raise TuneSpaceError(f"{env_where}: not an environment variable name")
                    env[env_name] = _env_value(env_value, env_where)
            else:
                _check_flag(key, where)
                flags[key] = _flag_value(value, key, where)
        configs.append(_config(flags, env, model, name))
    return configs


def _positive(table: Mapping[str, Any], path: Path, field: str, default: float) -> float:
    value = table.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise TuneSpaceError(
            f"{_where(path, '[tune]', field)}: expected a number > 0, got {value!r}"
        )
    return float(value)


def parse_space(text: str, path: Path) -> TuneSpace:
    """The space in a tune.toml's text; TuneSpaceError names the file and the field."""
    try:
        data = parse_toml(text, path)
    except ServedeckError as error:
        raise TuneSpaceError(str(error)) from None
    unknown = sorted(set(data) - {"tune", "grid", "config"})
    if unknown:
        raise TuneSpaceError(f"{path}: unknown table {unknown[0]!r} (expected tune, grid, config)")
    tune = data.get("tune", {})
    if not isinstance(tune, dict):
        raise TuneSpaceError(f"{path}: [tune] must be a table")
    extra = sorted(
        set(tune) - {"objective", "budget_s", "deadline_s", "input_tokens", "output_tokens"}
    )
    if extra:
        raise TuneSpaceError(f"{_where(path, '[tune]', extra[0])}: unknown field")
    objective = tune.get("objective", "capacity")
    if objective not in OBJECTIVES:
        raise TuneSpaceError(
            f"{_where(path, '[tune]', 'objective')}: expected one of "
            f"{', '.join(OBJECTIVES)}, got {objective!r}"
        )
    budget_s = _positive(tune, path, "budget_s", 4 * 3600.0)
    deadline_s = _positive(tune, path, "deadline_s", 1800.0)
    if deadline_s > budget_s:
        raise TuneSpaceError(
            f"{_where(path, '[tune]', 'deadline_s')}: {deadline_s:g} s is over the whole "
            f"budget_s ({budget_s:g} s)"
        )
    configs = _grid(path, data["grid"]) if "grid" in data else []
    configs += _listed(path, data["config"]) if "config" in data else []
    if not configs:
        raise TuneSpaceError(f"{path}: no configuration: give a [grid] or [[config]] tables")
    if len(configs) > MAX_CONFIGS:
        raise TuneSpaceError(f"{path}: {len(configs)} configurations, over {MAX_CONFIGS}")
    unique: dict[str, TuneConfig] = {}
    for config in configs:
        unique.setdefault(config.key, config)
    tokens = {
        field: int(_positive(tune, path, field, default))
        for field, default in (("input_tokens", 512), ("output_tokens", 128))
    }
    return TuneSpace(
        str(path), str(objective), budget_s, deadline_s, tuple(unique.values()), **tokens
    )


def load_space(path: Path) -> TuneSpace:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TuneSpaceError(
            f"{path}: cannot read: {getattr(error, 'strerror', None) or error}"
        ) from None
    return parse_space(text, path)


# The example space the demo runs, beside the package (a source checkout or editable install).
EXAMPLE_SPACE = Path(__file__).resolve().parents[2] / "examples" / "tune-demo.toml"


def default_space_path(profile_path: Path | None) -> Path:
    """The space a console offers first: `tune.toml` next to the profile, else the example."""
    beside = profile_path.parent / "tune.toml" if profile_path is not None else None
    if beside is not None and beside.is_file():
        return beside
    if EXAMPLE_SPACE.is_file():
        return EXAMPLE_SPACE
    return beside or Path("tune.toml")
