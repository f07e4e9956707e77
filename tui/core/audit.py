"""The audit log: every destructive request and its outcome, one JSON object per line.

Appends are single `write` calls on an O_APPEND descriptor, so concurrent
writers never interleave within a record; a torn last line is skipped on read.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tui.core import paths
from tui.core.redact import redact_data


def append_audit(
    event: str, host_label: str, details: Mapping[str, Any], path: Path | None = None
) -> dict[str, Any]:
    """Record one event (request, outcome, refusal) and return the record written."""
    record: dict[str, Any] = {
        "ts": time.time(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "event": event,
        "host": host_label,
        "operator": getpass.getuser(),
        "console_host": socket.gethostname(),
        "console_pid": os.getpid(),
    }
    via = os.environ.get("SERVEDECK_AUDIT_VIA")  # set by `servedeck serve` for a browser visit
    if via:
        record["via"] = via
    record.update(redact_data(json.loads(json.dumps(dict(details), default=str))))
    target = path or paths.audit_log_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, sort_keys=True, default=str) + "\n").encode()
    descriptor = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)
    return record


def read_audit(path: Path | None = None) -> Iterator[dict[str, Any]]:
    """Every complete record, oldest first; a truncated or garbled line is skipped."""
    target = path or paths.audit_log_path()
    try:
        handle = target.open("rb")
    except FileNotFoundError:
        return
    with handle:
        for raw in handle:
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record
