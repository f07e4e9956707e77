"""The load explanation for `servedeck status`: one short look at the host's counters.

Residency of the profile's checkpoint (the simulator's shard folder in the demo),
two I/O samples of the unit's process tree half a second apart, the log's phases,
and this host's earlier loads of the model. Never raises: what cannot be read is
None and the reason goes to "error".
"""

from __future__ import annotations

import asyncio
from typing import Any

from tui.core.errors import ServedeckError
from tui.deck import Deck
from tui.serving.load.explain import LoadExplain, LoadExplainer, earlier_loads
from tui.serving.load.io import checkpoint_residency, io_sample
from tui.serving.load.tracker import LoadProgress

SAMPLE_GAP_S = 0.5


def checkpoint_path(deck: Deck) -> str | None:
    """The shards to watch: the profile's model path; the simulator's shard folder in
    the demo, which has no checkpoint on disk unless its slow-disk mode made one."""
    return deck.checkpoint_dir


def history_key(deck: Deck) -> str:
    """The model's name in this host's history of loads (tui.serving.load.explain.earlier_loads)."""
    return deck.profile.model.name or (checkpoint_path(deck) or "")


async def collect_explain(
    deck: Deck,
    progress: LoadProgress,
    main_pid: int | None,
    first_answer_at_s: float | None = None,
    explainer: LoadExplainer | None = None,
    process_started_at_s: float | None = None,
) -> tuple[LoadExplain, str, str | None, str | None]:
    """(explanation, model key, checkpoint path, what could not be read).

    `explainer`: what was sampled while the load ran (the console's live watcher),
    so each phase has its own reads and CPU time; without it, two samples now."""
    explainer = explainer if explainer is not None else LoadExplainer()
    errors: list[str] = []
    path = checkpoint_path(deck)
    try:
        if path:
            residency = await checkpoint_residency(deck.host, path)
            explainer.residency_now = residency if residency.files else None
            errors.extend(residency.errors[:3])
        if main_pid or path:
            explainer.observe(await io_sample(deck.host, main_pid, path))
            await asyncio.sleep(SAMPLE_GAP_S)
            explainer.observe(await io_sample(deck.host, main_pid, path))
    except ServedeckError as error:
        errors.append(str(error))
    model = history_key(deck)
    explain = explainer.explain(
        progress,
        first_answer_at_s=first_answer_at_s,
        earlier=earlier_loads(deck.host_label, model),
        process_started_at_s=process_started_at_s,
    )
    return explain, model, path, "; ".join(errors) or None


async def load_explain_report(
    deck: Deck,
    progress: LoadProgress,
    main_pid: int | None,
    process_started_at_s: float | None = None,
) -> dict[str, Any]:
    explain, _model, path, error = await collect_explain(
        deck, progress, main_pid, process_started_at_s=process_started_at_s
    )
    data = explain.as_json()
    data["checkpoint_path"] = path
    data["error"] = error
    return data
