"""Where servedeck keeps its files (platformdirs), overridable for tests."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import platformdirs

_APP = "servedeck"
DEMO_SUBDIR = "demo"


def _override(env_name: str) -> Path | None:
    value = os.environ.get(env_name)
    return Path(value) if value else None


def config_dir() -> Path:
    """User profiles and servedeck's own known_hosts live here."""
    return _override("SERVEDECK_CONFIG_DIR") or Path(platformdirs.user_config_dir(_APP))


# Set while this process runs the demo: its records go to a `demo` folder beside the real
# ones, so the simulator's kills, benchmarks and summaries never mix with an operator's.
_demo_records = False


@contextlib.contextmanager
def demo_records(active: bool = True) -> Iterator[None]:
    """Within the block (a whole command), data_dir() and log_dir() are the demo's own."""
    global _demo_records
    previous = _demo_records
    _demo_records = active or previous
    try:
        yield
    finally:
        _demo_records = previous


def demo_records_note() -> str:
    """Where the demo keeps its records, for the console to state (call inside demo_records)."""
    return (
        f"Demo records are kept apart: history and summaries in {data_dir()}, audit in {log_dir()}"
    )


def _records(base: Path) -> Path:
    return base / DEMO_SUBDIR if _demo_records else base


def data_dir() -> Path:
    """Benchmark history and other results (the demo's own folder while it runs)."""
    return _records(_override("SERVEDECK_DATA_DIR") or Path(platformdirs.user_data_dir(_APP)))


def log_dir() -> Path:
    """The audit log and exported logs (the demo's own folder while it runs)."""
    return _records(_override("SERVEDECK_LOG_DIR") or Path(platformdirs.user_log_dir(_APP)))


def user_profiles_dir() -> Path:
    return config_dir() / "profiles"


def known_hosts_path() -> Path:
    """servedeck's own known_hosts, consulted after the profile's and ~/.ssh's."""
    return config_dir() / "known_hosts"


def audit_log_path() -> Path:
    return log_dir() / "audit.jsonl"
