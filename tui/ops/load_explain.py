"""The load explanation of a Deck's host: its Host, label, model and checkpoint read off
the Deck, the explaining done by tui/serving/load/explain_status.py."""

from __future__ import annotations

from typing import Any

from tui.deck import Deck
from tui.serving.load import explain_status
from tui.serving.load.explain import LoadExplain, LoadExplainer
from tui.serving.load.tracker import LoadProgress


def checkpoint_path(deck: Deck) -> str | None:
    """The shards to watch: the profile's model path; the simulator's shard folder in
    the demo, which has no checkpoint on disk unless its slow-disk mode made one."""
    return deck.checkpoint_dir


def history_key(deck: Deck) -> str:
    """The model's name in this host's history of loads (explain_status.history_key)."""
    return explain_status.history_key(deck.profile.model.name, checkpoint_path(deck))


async def collect_explain(
    deck: Deck,
    progress: LoadProgress,
    main_pid: int | None,
    first_answer_at_s: float | None = None,
    explainer: LoadExplainer | None = None,
    process_started_at_s: float | None = None,
) -> tuple[LoadExplain, str, str | None, str | None]:
    """(explanation, model key, checkpoint path, what could not be read)."""
    path, model = checkpoint_path(deck), history_key(deck)
    explain, error = await explain_status.collect_explain(
        deck.host,
        deck.host_label,
        model,
        path,
        progress,
        main_pid,
        first_answer_at_s=first_answer_at_s,
        explainer=explainer,
        process_started_at_s=process_started_at_s,
    )
    return explain, model, path, error


async def load_explain_report(
    deck: Deck,
    progress: LoadProgress,
    main_pid: int | None,
    process_started_at_s: float | None = None,
) -> dict[str, Any]:
    """`servedeck status`'s load_explain entry: two samples now, never raising."""
    explain, _model, path, error = await collect_explain(
        deck, progress, main_pid, process_started_at_s=process_started_at_s
    )
    return explain_status.report_json(explain, path, error)
