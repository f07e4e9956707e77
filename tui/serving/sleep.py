"""vLLM's sleep mode as an action: put the engine to sleep or wake it, confirmed and audited.

The routes are vLLM's dev-mode ones (vllm/entrypoints/serve/dev/sleep/api_router.py:
POST /sleep?level=N, POST /wake_up, GET /is_sleeping), served only when the server runs
with --enable-sleep-mode and VLLM_SERVER_DEV_MODE=1: /is_sleeping answering is what says
the actions exist (the engine's args alone do not: without dev mode /sleep is a 404).
The level comes from the gauge `vllm:engine_sleep_state` (label `sleep_state`: awake,
weights_offloaded = level 1, discard_all = level 2; PrometheusStatLogger in
vllm/v1/metrics/loggers.py). Before acting, the server is asked again: the same models
still served and the state the operator saw (awake before a sleep, asleep before a
wake); a server that changed under the dialog is refused, not acted on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tui.core.audit import append_audit
from tui.core.errors import ServedeckError

if TYPE_CHECKING:
    import httpx

    from tui.serving.metrics import MetricsScrape

SLEEP_STATE = "vllm:engine_sleep_state"
# The `sleep_state` label's values that mean a level (awake = 0 means asleep).
_LEVEL_OF_STATE = {"weights_offloaded": 1, "discard_all": 2}
VERBS = ("sleep", "wake")


def sleep_level(scrape: MetricsScrape) -> int | None:
    """0 awake, 1 or 2 asleep at that level (the deepest engine), None when not exposed."""
    states = scrape.labelled(SLEEP_STATE)
    if not states:
        return None
    level = 0
    for labels, value in states:
        if value >= 1:
            level = max(level, _LEVEL_OF_STATE.get(labels.get("sleep_state", ""), 0))
    return level


@dataclass(frozen=True, slots=True)
class SleepAction:
    """What the confirm dialog shows and the audit records: where, which server, the request."""

    host_label: str
    base_url: str
    verb: str  # "sleep" or "wake"
    level: int  # the sleep level asked for (wake: 0)
    models: tuple[str, ...]  # the models served when the operator was asked

    @property
    def unit(self) -> str:
        """The target as the confirm dialog names it."""
        return f"{', '.join(self.models) or 'the engine'} at {self.base_url}"

    @property
    def command_line(self) -> str:
        if self.verb == "sleep":
            return f"POST {self.base_url}/sleep?level={self.level}"
        return f"POST {self.base_url}/wake_up"


@dataclass(frozen=True, slots=True)
class SleepOutcome:
    action: SleepAction
    ok: bool
    message: str
    duration_s: float


def describe_sleep(
    host_label: str, base_url: str, verb: str, models: tuple[str, ...], level: int = 1
) -> SleepAction:
    if verb not in VERBS:
        raise ServedeckError(f"unknown sleep action {verb!r} (expected one of {VERBS})")
    if verb == "sleep" and level not in (1, 2):
        raise ServedeckError(f"sleep level {level}: vLLM takes 1 (offload weights) or 2 (discard)")
    return SleepAction(
        host_label, base_url.rstrip("/"), verb, level if verb == "sleep" else 0, models
    )


def _details(action: SleepAction) -> dict[str, object]:
    return {"action": action.verb, "level": action.level, "request": action.command_line}


def audit_sleep_refusal(action: SleepAction, reason: str, audit_path: Path | None = None) -> None:
    append_audit(
        "sleep.refused", action.host_label, {**_details(action), "reason": reason}, audit_path
    )


async def _recheck(
    action: SleepAction, http: httpx.AsyncClient, headers: dict[str, str]
) -> str | None:
    """Why the server is no longer the one confirmed (None: it is)."""
    listing = await http.get(f"{action.base_url}/v1/models", headers=headers)
    if listing.status_code != 200:
        return f"/v1/models answered {listing.status_code}"
    data = listing.json().get("data", [])
    served = tuple(str(m.get("id", "?")) for m in data if isinstance(m, dict))
    if served != action.models:
        return f"the server now serves {', '.join(served) or 'nothing'}, not {', '.join(action.models)}"
    answer = await http.get(f"{action.base_url}/is_sleeping", headers=headers)
    if answer.status_code != 200:
        return f"/is_sleeping answered {answer.status_code} (sleep mode off)"
    asleep = answer.json().get("is_sleeping")
    if not isinstance(asleep, bool):
        return "/is_sleeping gave no answer"
    if asleep and action.verb == "sleep":
        return "the engine is already asleep"
    if not asleep and action.verb == "wake":
        return "the engine is already awake"
    return None


async def perform_sleep(
    action: SleepAction,
    *,
    confirmed: bool,
    read_only: bool,
    api_key: str | None = None,
    timeout_s: float = 120.0,
    audit_path: Path | None = None,
) -> SleepOutcome:
    """Carry out a confirmed sleep or wake: refusal, request and outcome audited.

    Raises ServedeckError (audited) when refused (read-only, not confirmed, the server
    changed since the dialog) or when the server cannot be reached.
    """
    import httpx

    if read_only or not confirmed:
        reason = "read-only mode" if read_only else "not confirmed"
        audit_sleep_refusal(action, reason, audit_path)
        raise ServedeckError(f"{action.host_label}: {action.verb} refused: {reason}")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    started = time.monotonic()
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=5.0)) as http:
            changed = await _recheck(action, http, headers)
            if changed is not None:
                audit_sleep_refusal(action, changed, audit_path)
                raise ServedeckError(f"{action.host_label}: {action.verb} refused: {changed}")
            append_audit("sleep.request", action.host_label, _details(action), audit_path)
            path = f"/sleep?level={action.level}" if action.verb == "sleep" else "/wake_up"
            response = await http.post(f"{action.base_url}{path}", headers=headers)
    except (httpx.HTTPError, ValueError, AttributeError) as error:
        reason = f"{type(error).__name__}: {error}"
        append_audit(
            "sleep.outcome",
            action.host_label,
            {**_details(action), "ok": False, "error": reason},
            audit_path,
        )
        raise ServedeckError(f"{action.base_url}: {action.verb}: {reason}") from None
    ok = response.status_code == 200
    message = response.text.strip().splitlines()[0][:200] if response.text.strip() else ""
    message = message or f"HTTP {response.status_code}"
    append_audit(
        "sleep.outcome",
        action.host_label,
        {**_details(action), "ok": ok, "status": response.status_code, "message": message},
        audit_path,
    )
    return SleepOutcome(action, ok, message, time.monotonic() - started)
