"""After a load: the one-line diagnosis as a notification and on the Deck, and the load kept.

Runs once per ready (a worker, off the UI thread); the next load's explanation
checks this one's prediction against what it took.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tui.app.messages import LoadLiveUpdate
from tui.core.errors import ServedeckError
from tui.core.formatting import prediction_error
from tui.serving.load.live import final_load
from tui.serving.load.tracker import Phase

if TYPE_CHECKING:
    from tui.app import ServedeckApp


async def explain_after_ready(app: ServedeckApp) -> None:
    from tui.ops.load_explain import collect_explain
    from tui.serving.load.history import record_load  # once a load is done, not at console start

    progress = app.tracker.snapshot()
    # A load is a start-to-ready span seen in the log, explained (and kept) once.
    if progress.phase != Phase.SERVING or not progress.timeline:
        return
    started_s = progress.timeline[0].started_at_s
    if app.explained_load_s == started_s:
        return
    app.explained_load_s = started_s
    main_pid = app.unit_state.main_pid if app.unit_state is not None else None
    process_s = app.unit_state.started_at_s if app.unit_state is not None else None
    try:
        watcher = app.load_live_watcher
        seen = watcher.explainer if watcher is not None and watcher.pid == main_pid else None
        explain, model, _path, _error = await collect_explain(
            app.deck,
            progress,
            main_pid,
            first_answer_at_s=time.time(),
            explainer=seen,
            process_started_at_s=process_s,
        )
    except ServedeckError as error:
        app.notify(f"load explainer: {error}", severity="warning")
        app.post_message(LoadLiveUpdate(final_load(f"ready; not explained: {error}")))
        return
    record_load(app.deck.host_label, model, explain)
    off_s = explain.previous_prediction_error_s
    checked = f" (last prediction {prediction_error(off_s)})" if off_s is not None else ""
    app.notify(f"{explain.diagnosis}{checked}", title="Load", timeout=15)
    # The Deck's live line becomes the diagnosis (it showed the load while it ran).
    app.post_message(LoadLiveUpdate(final_load(f"{explain.diagnosis}{checked}")))
