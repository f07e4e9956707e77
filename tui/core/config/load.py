"""A profile from TOML: the file read safely, parsed, every table checked, one line a problem.

The file is a regular file under PROFILE_MAX_BYTES, read within PROFILE_READ_TIMEOUT_S;
a TOML error names its line and column; `demo_profile` needs no file at all.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tui.core.config.alert_tables import alerting_config, record_config
from tui.core.config.schema import HandoffNotes, HostConfig, ModelConfig, Profile, ServiceConfig
from tui.core.config.sections import (
    benchmark_config,
    deployment_config,
    gpu_config,
    handoff_notes,
    host_config,
    keys_from,
    model_config,
    service_config,
)
from tui.core.config.table import TomlTable
from tui.core.errors import ProfileError

_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")
PROFILE_MAX_BYTES = 1024 * 1024
PROFILE_READ_TIMEOUT_S = 5.0


def profile_from_data(
    data: Mapping[str, Any], name: str, path: Path | None
) -> tuple[Profile, list[str]]:
    """Build a Profile; returns it with the list of problems (empty when valid)."""
    problems: list[str] = []
    root = TomlTable(data, "", problems)
    section: Callable[[str], TomlTable] = root.table
    benchmark = benchmark_config(section("benchmark"))
    profile = Profile(
        name=root.string("name", name) or name,
        path=path,
        description=root.string("description", "") or "",
        read_only=root.boolean("read_only", False),
        host=host_config(section("host")),
        service=service_config(section("service")),
        model=model_config(section("model")),
        deployment=deployment_config(section("deployment")),
        gpu=gpu_config(section("gpu")),
        benchmark=benchmark,
        handoff=handoff_notes(section("handoff")),
        keys=keys_from(section("keys")),
        alerting=alerting_config(section("alerting"), root.tables("alerts"), benchmark.slo),
        record=record_config(section("record")),
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
