"""The summary's hardware facts of a Deck: its interconnect checks, GPU health, last probe.

Read-only: the probe is never run from here, only its last recorded result for this
host is quoted. `tui.summary.hardware_section` draws them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui.core import paths
from tui.deck import Deck
from tui.health.interconnect.rules import InterconnectReport
from tui.health.report import HealthReport
from tui.ops.probe_run import PROBE_HISTORY


@dataclass(frozen=True, slots=True)
class HardwareHealth:
    interconnect: InterconnectReport | None
    health: HealthReport | None
    probe: dict[str, Any] | None = None  # the last `servedeck probe` record for this host


def last_probe(host_label: str, path: Path | None = None) -> dict[str, Any] | None:
    """The newest probe record for the host; a torn or foreign line is skipped."""
    target = path or paths.data_dir() / PROBE_HISTORY
    found = None
    try:
        lines = target.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("host") == host_label:
            found = record
    return found


async def collect_hardware_health(deck: Deck) -> HardwareHealth:
    interconnect = await deck.interconnect()
    health = await deck.hardware_health()
    return HardwareHealth(interconnect, health, last_probe(deck.host_label))
