"""The load explanation from one short look at a host's counters (`servedeck status`).

Residency of the checkpoint, two I/O samples of the unit's process tree half a second
apart, the log's phases, and this host's earlier loads of the model. Takes a Host and
plain data (tui/ops/load_explain.py reads them off a Deck). Never raises: what cannot be
read is None and the reason goes to "error".
"""

from __future__ import annotations

import asyncio
from typing import Any

from tui.core.errors import ServedeckError
from tui.hosts.base import Host
from tui.serving.load.explain import LoadExplain, LoadExplainer
from tui.serving.load.history import earlier_loads
from tui.serving.load.io import checkpoint_residency, io_sample
from tui.serving.load.tracker import LoadProgress

SAMPLE_GAP_S = 0.5


def history_key(model_name: str | None, checkpoint_path: str | None) -> str:
    """The model's name in a host's history of loads (tui.serving.load.history.earlier_loads):
    the profile's model name, else its checkpoint path."""
    return model_name or (checkpoint_path or "")


async def collect_explain(
    host: Host,
    host_label: str,
    model: str,
    path: str | None,
    progress: LoadProgress,
    main_pid: int | None,
    first_answer_at_s: float | None = None,
    explainer: LoadExplainer | None = None,
    process_started_at_s: float | None = None,
) -> tuple[LoadExplain, str | None]:
    """(explanation, what could not be read) of the load of `model` (history_key) with its
    shards at `path`.

    `explainer`: what was sampled while the load ran (the console's live watcher),
    so each phase has its own reads and CPU time; without it, two samples now."""
    explainer = explainer if explainer is not None else LoadExplainer()
    errors: list[str] = []
    try:
        if path:
            residency = await checkpoint_residency(host, path)
            explainer.residency_now = residency if residency.files else None
            errors.extend(residency.errors[:3])
        if main_pid or path:
            explainer.observe(await io_sample(host, main_pid, path))
            await asyncio.sleep(SAMPLE_GAP_S)
            explainer.observe(await io_sample(host, main_pid, path))
    except ServedeckError as error:
        errors.append(str(error))
    explain = explainer.explain(
        progress,
        first_answer_at_s=first_answer_at_s,
        earlier=earlier_loads(host_label, model),
        process_started_at_s=process_started_at_s,
    )
    return explain, "; ".join(errors) or None


def report_json(explain: LoadExplain, path: str | None, error: str | None) -> dict[str, Any]:
    """The explanation as `servedeck status --json` states it."""
    data = explain.as_json()
    data["checkpoint_path"] = path
    data["error"] = error
    return data
