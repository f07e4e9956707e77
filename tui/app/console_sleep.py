"""Part: vLLM's sleep mode on the Deck: Z puts the engine to sleep, W wakes it.

Offered only once the server answered /is_sleeping (sleep mode with dev mode on); read-only
refuses them as it refuses S/X/R. Each asks first with the exact request, then
`tui.serving.sleep.perform_sleep` asks the server again (same models, the state the
operator saw) and audits the request, the refusal or the outcome.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.app.console_protocol import Console, Part
from tui.app.console_workers import console_worker
from tui.app.messages import SleepDone
from tui.core.errors import ServedeckError
from tui.screens.confirm_action import ConfirmActionScreen
from tui.serving.sleep import SleepAction, audit_sleep_refusal, describe_sleep, perform_sleep

if TYPE_CHECKING:
    from tui.deck import Deck
    from tui.serving.readiness import Readiness

_NOTES = {
    "sleep": "Level 1 offloads the weights to CPU memory and frees the KV cache: requests "
    "are refused until W wakes it.",
    "wake": "The weights come back to the GPUs; the first requests may wait for them.",
}


class SleepPart(Part):
    """The engine's sleep state as the readiness probe last read it, and Z/W."""

    def __init__(self, deck: Deck, console: Console) -> None:
        super().__init__(deck, console)
        self.asleep: bool | None = None  # None: /is_sleeping never answered (no sleep mode)
        self.level: int | None = None
        self._models: tuple[str, ...] = ()

    def observe(self, readiness: Readiness) -> None:
        """A readiness answer: sleep mode exists once /is_sleeping answered a bool."""
        if readiness.asleep is not None:
            self.asleep = readiness.asleep
            self.level = readiness.sleep_level
            self._models = readiness.models or self._models
            self.console.refresh_bindings()

    def act(self, verb: str) -> None:
        """Z or W: refused read-only, else the confirm dialog, then the audited request."""
        action = describe_sleep(
            self.deck.host_label, self.deck.base_url, verb, self._models, level=1
        )
        if self.profile.read_only:
            audit_sleep_refusal(action, "read-only mode")
            self.console.notify(f"Read-only: {verb} is disabled.", severity="warning")
            return

        def confirmed(answer: bool | None) -> None:
            if answer:
                self._run(action)

        self.console.push_screen(ConfirmActionScreen(action, _NOTES[verb]), confirmed)

    @console_worker(
        "sleep-action",
        pane="sleep-action",
        what=lambda part, action: f"{action.verb} the engine on {action.host_label}",
        user_action=True,
    )
    async def _run(self, action: SleepAction) -> None:
        try:
            url = await self.deck.reachable_base_url()
            action = describe_sleep(
                action.host_label, url, action.verb, action.models, level=action.level or 1
            )
            outcome = await perform_sleep(
                action, confirmed=True, read_only=self.profile.read_only, api_key=self.deck.api_key
            )
        except ServedeckError as error:
            self.post_message(SleepDone(action.verb, None, str(error)))
        else:
            self.post_message(SleepDone(action.verb, outcome))

    def done(self, message: SleepDone) -> None:
        """Say how it went; the readiness probe then reads the new state."""
        outcome = message.outcome
        if message.error or outcome is None or not outcome.ok:
            detail = message.error or (outcome.message if outcome else "")
            self.console.notify(
                f"Tried to {message.verb} the engine on {self.deck.host_label}; it failed: "
                f"{detail}. Nothing else was done.",
                title="Sleep mode",
                severity="error",
                timeout=10,
            )
            return
        self.asleep = message.verb == "sleep"
        self.level = 1 if self.asleep else None
        self.console.notify(f"{message.verb}: {outcome.message}", title="Sleep mode")
        self.console.refresh_bindings()
