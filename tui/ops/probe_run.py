"""The probe's checks and records, shared by `servedeck probe` and the Health pane."""

from __future__ import annotations

import json
import time

from tui.core import paths
from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from tui.deck import Deck
from tui.health.interconnect.doctor_run import run_interconnect
from tui.health.interconnect.probe import judge, refusal, run_probe_script
from tui.health.interconnect.rules import InterconnectReport

PROBE_HISTORY = "probe-history.jsonl"
ACTIVE_STATES = ("active", "activating", "reloading")


async def probe_refusal(deck: Deck) -> tuple[str | None, int]:
    """(why the probe must not run, GPU count): the service must be down, every GPU idle."""
    controller = deck.service()
    active = None
    if controller is not None:
        state = await controller.state()
        if state.active_state in ACTIVE_STATES:
            active = f"{state.unit} {state.active_state}"
    snapshot = await (await deck.gpu_source()).sample()
    unsupported = deck.probe_unsupported
    if unsupported is not None and active is None:
        return unsupported, 0
    return refusal(active, snapshot), snapshot.gpu_count


def probe_python(deck: Deck) -> str:
    python = deck.profile.service.python
    if not python:
        raise ServedeckError(
            f"profile {deck.profile.name}: service.python is not set (the serving venv's "
            "Python, with torch and NCCL)"
        )
    return python


async def run_and_record(
    deck: Deck, max_bytes: int = 1024**3, doctor: InterconnectReport | None = None
) -> dict[str, object]:
    """Run the probe over the deck's host, judge it, append it to the history; audited."""
    python = probe_python(deck)
    where = deck.host_label
    append_audit("probe_request", where, {"python": python, "max_bytes": max_bytes})
    started = time.time()
    if doctor is None:
        doctor = await run_interconnect(deck.host, deck.profile)
    try:
        raw = await run_probe_script(deck.host, python, ["--max-bytes", str(max_bytes)])
    except ValueError as error:
        append_audit("probe_outcome", where, {"error": str(error)})
        raise ServedeckError(f"probe on {where}: {error}") from None
    result = judge(raw, doctor).as_dict()
    append_audit("probe_outcome", where, {"verdict": result["verdict"]})
    history = paths.data_dir() / PROBE_HISTORY
    history.parent.mkdir(parents=True, exist_ok=True)
    with history.open("a") as handle:
        handle.write(json.dumps({"ts": started, "host": where, **result}) + "\n")
    return result
