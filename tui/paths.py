"""Where servedeck keeps its files (platformdirs), overridable for tests."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

_APP = "servedeck"


def _override(env_name: str) -> Path | None:
    value = os.environ.get(env_name)
    return Path(value) if value else None


def config_dir() -> Path:
    """User profiles and servedeck's own known_hosts live here."""
    return _override("SERVEDECK_CONFIG_DIR") or Path(platformdirs.user_config_dir(_APP))


def data_dir() -> Path:
    """Benchmark history and other results."""
    return _override("SERVEDECK_DATA_DIR") or Path(platformdirs.user_data_dir(_APP))


def log_dir() -> Path:
    """The audit log and exported logs."""
    return _override("SERVEDECK_LOG_DIR") or Path(platformdirs.user_log_dir(_APP))


def user_profiles_dir() -> Path:
    return config_dir() / "profiles"


def known_hosts_path() -> Path:
    """servedeck's own known_hosts, consulted after the profile's and ~/.ssh's."""
    return config_dir() / "known_hosts"


def audit_log_path() -> Path:
    return log_dir() / "audit.jsonl"
