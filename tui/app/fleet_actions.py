"""The Fleet's actions on a host: planned (host re-read), confirmed, re-checked, audited.

Restart/stop (S/X/R), a quick benchmark (b) and the clean-up of leftovers (K, on the
highlighted host or every marked one) each plan in a worker, ask the operator in their
own dialog, then run on the host's Deck; what each did comes back as one line.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.css.query import NoMatches
from textual.message import Message
from textual.worker import Worker

from tui.app.console_workers import console_worker
from tui.core.errors import ServedeckError
from tui.deck import Deck
from tui.fleet.actions import (
    CleanupPlan,
    ServicePlan,
    plan_cleanup,
    plan_service,
    run_cleanup,
    run_service,
)
from tui.fleet.bench_action import BenchPlan, bench_line, plan_bench, run_bench_on_host
from tui.fleet.collector import DeckProbe
from tui.offered import FLEET_ROW_ACTIONS, fleet_refusal
from tui.procs.text import report_lines
from tui.screens.confirm_action import ConfirmActionScreen
from tui.screens.confirm_bench import ConfirmBenchScreen
from tui.screens.kill_confirm import KillConfirmation, KillConfirmScreen
from widgets.fleet_table import FleetTable

if TYPE_CHECKING:
    from tui.app.fleet_app import FleetApp


@dataclass
class FleetPlanned(Message):
    """A fleet action is planned (host re-read): the app asks the operator now."""

    plan: ServicePlan | CleanupPlan | BenchPlan


@dataclass
class FleetActionDone(Message):
    """What a confirmed fleet action did, in one line (also in the audit log)."""

    host: str
    text: str
    ok: bool


class FleetActions:
    """The Fleet app's host actions; its workers are the app's (cancelled when it quits)."""

    def __init__(self, app: FleetApp) -> None:
        self.app = app

    def run_worker(self, *args: Any, **kwargs: Any) -> Worker[Any]:
        return self.app.run_worker(*args, **kwargs)

    def post_message(self, message: Message) -> bool:
        return self.app.post_message(message)

    def selected_deck(self, what: str) -> tuple[str, Deck] | None:
        host = self.app.query_one(FleetTable).selected_host()
        if host is None:
            return None
        probe = self.app.collector.probe(host)
        if not isinstance(probe, DeckProbe):
            self.app.notify(f"{host}: {what} is not available on a simulated box", markup=False)
            return None
        return host, probe.deck

    def service(self, verb: str) -> None:
        chosen = self.selected_deck(verb)
        if chosen is not None:
            self._plan_service(*chosen, verb)

    def bench(self) -> None:
        chosen = self.selected_deck("a benchmark")
        if chosen is not None:
            self._plan_bench(*chosen)

    def cleanup(self, marked: list[str]) -> None:
        """Clean up each marked host, or the highlighted one when none is marked."""
        if marked:
            chosen = []
            for host in marked:
                probe = self.app.collector.probe(host)
                if isinstance(probe, DeckProbe):
                    chosen.append((host, probe.deck))
                else:
                    self.app.notify(f"{host}: clean up is not available here", markup=False)
            if chosen:
                self._plan_cleanups(chosen)
            return
        picked = self.selected_deck("clean up")
        if picked is not None:
            self._plan_cleanup(*picked)

    @console_worker(
        "fleet-plan",
        pane="fleet",
        what=lambda app, host, deck, verb: f"{verb} on {host}",
        user_action=True,
    )
    async def _plan_service(self, host: str, deck: Deck, verb: str) -> None:
        self.post_message(FleetPlanned(await plan_service(host, deck, verb)))

    @console_worker(
        "fleet-plan",
        pane="fleet",
        what=lambda app, host, deck: f"a benchmark on {host}",
        user_action=True,
    )
    async def _plan_bench(self, host: str, deck: Deck) -> None:
        self.post_message(FleetPlanned(await plan_bench(host, deck)))

    @console_worker(
        "fleet-plan",
        pane="fleet",
        what=lambda app, host, deck: f"clean up leftovers on {host}",
        user_action=True,
    )
    async def _plan_cleanup(self, host: str, deck: Deck) -> None:
        self.post_message(FleetPlanned(await plan_cleanup(host, deck)))

    @console_worker(
        "fleet-plan",
        pane="fleet",
        what=lambda app, chosen: f"clean up leftovers on {len(chosen)} marked hosts",
        user_action=True,
    )
    async def _plan_cleanups(self, chosen: list[tuple[str, Deck]]) -> None:
        """Each marked host planned on its own: one refusal or failure leaves the others."""

        async def plan(host: str, deck: Deck) -> None:
            try:
                self.post_message(FleetPlanned(await plan_cleanup(host, deck)))
            except ServedeckError as error:
                self.post_message(FleetActionDone(host, f"clean up on {host}: {error}", False))

        await asyncio.gather(*(plan(host, deck) for host, deck in chosen))

    def confirm(self, plan: ServicePlan | CleanupPlan | BenchPlan) -> None:
        """Ask the operator about a planned action (its own dialog each); run it if yes."""
        if isinstance(plan, BenchPlan):

            def confirmed(yes: bool | None) -> None:
                if yes:
                    self.app.notify(
                        f"{plan.host}: benchmark started ({plan.workload})", markup=False
                    )
                    self._run_planned(plan, "benchmark")

            self.app.push_screen(ConfirmBenchScreen(plan), confirmed)
            return
        if isinstance(plan, ServicePlan):

            def answered(yes: bool | None) -> None:
                if yes:
                    self._run_planned(plan, plan.action.verb)

            note = f"Machine {plan.identity.text}: checked again just before acting."
            self.app.push_screen(ConfirmActionScreen(plan.action, note), answered)
            return
        if not plan.targets:
            refused = f" ({len(plan.refused)} refused)" if plan.refused else ""
            self.app.notify(f"{plan.host}: no leftover GPU processes to end{refused}", markup=False)
            return

        def killed(answer: KillConfirmation | None) -> None:
            if answer is not None and answer.targets:
                self._run_planned(
                    CleanupPlan(
                        plan.host, plan.host_label, answer.targets, plan.refused, plan.identity
                    ),
                    "clean up",
                )

        self.app.push_screen(
            KillConfirmScreen(plan.host_label, plan.targets, timeout_s=15.0), killed
        )

    @console_worker(
        "fleet-action",
        pane="fleet",
        what=lambda app, plan, verb: f"{verb} on {plan.host}",
        user_action=True,
        exclusive=False,  # marked hosts' confirmed clean-ups run side by side, none cancelled
    )
    async def _run_planned(self, plan: ServicePlan | CleanupPlan | BenchPlan, verb: str) -> None:
        probe = self.app.collector.probe(plan.host)
        if not isinstance(probe, DeckProbe):
            raise ServedeckError(f"{plan.host}: no longer in the fleet")
        if isinstance(plan, BenchPlan):
            result = await run_bench_on_host(plan, probe.deck, confirmed=True)
            ok = not result.partial and any(level.completed for level in result.levels)
            text = f"{plan.host}: benchmark {plan.preset}: {bench_line(result)}"
            self.post_message(FleetActionDone(plan.host, text, ok))
            return
        if isinstance(plan, ServicePlan):
            outcome = await run_service(plan, probe.deck, confirmed=True)
            text = f"{plan.host}: {verb} {plan.action.unit}: " + (
                "done" if outcome.ok else f"failed (exit {outcome.exit_status}) {outcome.message}"
            )
            self.post_message(FleetActionDone(plan.host, text, outcome.ok))
            return
        report = await run_cleanup(plan, probe.deck)
        lines = report_lines(report)
        self.post_message(
            FleetActionDone(plan.host, f"{plan.host}: " + "; ".join(lines), report.all_ended)
        )

    def refusal(self, action: str, parameters: tuple[object, ...]) -> str | None:
        """Why a row action cannot run on the highlighted row (K with marks: it can)."""
        if action not in FLEET_ROW_ACTIONS or (action == "fleet_cleanup" and self.app.marked):
            return None
        try:
            host = self.app.query_one(FleetTable).selected_host()
        except NoMatches:
            return None
        row = next((r for r in self.app.rows if r.host == host), None)
        probe = self.app.collector.probe(host) if host is not None else None
        kind = "deck" if isinstance(probe, DeckProbe) else "prometheus" if probe is None else "demo"
        return fleet_refusal(
            action,
            parameters,
            host=host,
            reachable=row is not None and row.reachable,
            kind=kind,
            read_only=isinstance(probe, DeckProbe) and probe.deck.profile.read_only,
        )
