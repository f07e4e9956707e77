"""The console's Plan pane and state summary (preview, one-key export): a part of ServedeckApp."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Static

from tui.app import messages
from tui.app.console_protocol import Part
from tui.app.console_workers import console_worker, failure_text
from tui.core import paths
from tui.core.audit import append_audit
from tui.core.errors import ServedeckError
from widgets.plan_view import PlanView

if TYPE_CHECKING:
    from pathlib import Path


class HandoffPart(Part):
    """The Plan pane (planned when shown) and the state summary's preview and export."""

    def _status(self) -> Static:
        return self.console.query_one("#plan-status", Static)

    @console_worker("plan", pane="plan", what="plan the deployment layouts")
    async def show_plan(self) -> None:
        from tui.ops.plan import plan_for_deck  # the planner loads at the Plan tab

        self._status().update("Reading the model and planning layouts ...")
        try:
            progress = self.console.progress
            engine = progress.facts if progress is not None else None
            plan = await plan_for_deck(self.deck, self.console.last_gpu, engine)
        except ServedeckError as error:
            self.post_message(messages.PlanReady(None, str(error)))
        else:
            self.post_message(messages.PlanReady(plan))

    def plan_failed(self, reason: str) -> None:
        self._status().update(f"No plan: {reason}")

    def plan_ready(self, message: messages.PlanReady) -> None:
        if message.plan is None:
            self.plan_failed(str(message.error))
            return
        from tui.plan.for_profile import profile_layout

        layout = profile_layout(self.profile)
        chosen = message.plan.find(layout.tp, layout.ep, layout.pp, layout.dp)
        verdict = chosen.verdict if chosen is not None else "not a candidate"
        self._status().update(f"Profile layout {layout.label}: {verdict}")
        self.console.query_one(PlanView).show_plan(message.plan, layout)

    def preview_summary(self) -> None:
        from tui.screens.summary import SummaryScreen  # markdown-it loads on first use

        self.console.push_screen(SummaryScreen(self._summary_markdown, self._export_summary))

    def export_summary(self) -> None:
        self.console.notify("Collecting the state summary ...", title="Summary")
        self._export_summary_now()

    @console_worker(
        "summary-export", pane="summary", what="collect and export the summary", user_action=True
    )
    async def _export_summary_now(self) -> None:
        """One key: collect and write the summary without the preview (collection is async)."""
        try:
            path = self._export_summary(await self._summary_markdown())
        except ServedeckError as error:
            append_audit(
                "summary.export_failed", self.deck.host_label, {"error": failure_text(str(error))}
            )
            self.console.notify(
                f"Tried to collect and export the summary; it failed: {failure_text(str(error))}. "
                "Nothing was written.",
                title="Export failed",
                severity="error",
                timeout=8,
            )
        else:
            self.console.notify(f"Wrote {path}", title="Summary exported", timeout=10)

    async def _summary_markdown(self) -> str:
        from tui.summary import collect_summary, render_markdown, summary_secrets

        # The live tracker's load (when it saw one); otherwise the summary replays the log.
        progress = self.console.progress
        live = progress if progress is not None and progress.timeline else None
        inputs = await collect_summary(self.deck, load=live)
        return render_markdown(inputs, summary_secrets(self.deck))

    def _export_summary(self, markdown: str) -> Path:
        from tui.summary import export_summary

        folder = paths.data_dir() / "summaries"
        folder.mkdir(parents=True, exist_ok=True)
        return export_summary(markdown, self.profile.name, folder=folder)
