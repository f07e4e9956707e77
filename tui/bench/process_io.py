"""What both benchmark processes (tui/bench/runner.py, tui/bench/capacity/runner.py) do
the same way: JSON-line events on stdout with the API key redacted, cancellation on
SIGINT/SIGTERM and at the wall deadline, the model and server version asked once, and
a failure told in one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from typing import Any

import httpx

from tui.bench.adapters import AdapterSpecError, check_served
from tui.bench.workload import BenchSpec, api_url
from tui.core.redact import redact_data

_KNOWN_SECRETS: list[str] = []  # the API key, once read: never in any event


def emit(event: str, **fields: Any) -> None:
    """One event line on stdout, flushed at once; secrets redacted before serialising."""
    record = redact_data({"event": event, **fields}, _KNOWN_SECRETS)
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def api_key_for(spec: BenchSpec) -> str | None:
    key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
    if key and key not in _KNOWN_SECRETS:
        _KNOWN_SECRETS.append(key)  # a server may echo it in an error body
    return key


def install_cancel(cancel: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, cancel.set)


async def discover(control: httpx.AsyncClient, spec: BenchSpec) -> tuple[str, str]:
    """The model to ask for (first of /v1/models unless given) and the server version."""
    model = spec.model
    if not model or spec.lora:
        response = await control.get(api_url(spec.base_url, "/v1/models"))
        response.raise_for_status()
        served = response.json()["data"]
        if spec.lora:
            check_served(spec.lora, served, spec.base_url)
        model = model or served[0]["id"]
    version = ""
    with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
        response = await control.get(api_url(spec.base_url, "/version"))
        body = response.json() if response.status_code == 200 else None
        if isinstance(body, dict):  # a list or a bare value is no version
            version = str(body.get("version", ""))
    return model, version


class WarmupStalled(ValueError):
    """The server took the warm-up request but never answered it: no run can succeed."""


async def wall_deadline(limit_s: float, cancel: asyncio.Event) -> bool:
    """Cancel the run (results so far kept, marked partial) once it has run `limit_s`."""
    if not limit_s or limit_s <= 0:
        return False
    await asyncio.sleep(limit_s)
    cancel.set()
    return True


def describe(error: BaseException) -> str:
    if isinstance(error, (WarmupStalled, AdapterSpecError)):
        return str(error)
    if isinstance(error, httpx.HTTPStatusError):
        return f"{error.request.url}: HTTP {error.response.status_code}"
    if isinstance(error, httpx.HTTPError):
        where = ""
        with contextlib.suppress(RuntimeError):
            where = f"{error.request.url}: "
        return f"{where}{type(error).__name__}: {error or 'no answer'}"
    return f"{type(error).__name__}: {error}"
