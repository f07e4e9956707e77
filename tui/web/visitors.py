"""The cap on concurrent visitors: a page load reserves a slot, its websocket claims it.

Reserving at page load (not at websocket time) lets a visitor over the cap get a clear
"full" page instead of a blank terminal. A reservation nobody claims (the page never
connected) lapses after `claim_window_s`, so abandoned loads cannot fill the server.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Visit:
    visit_id: str
    remote: str
    reserved_at_s: float
    started_wall_s: float | None = None
    pid: int | None = None

    @property
    def claimed(self) -> bool:
        return self.started_wall_s is not None


class VisitorSlots:
    """At most `cap` visits reserved or running at once; every call is O(cap)."""

    def __init__(
        self,
        cap: int,
        claim_window_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if cap < 1:
            raise ValueError(f"visitor cap must be at least 1, got {cap}")
        self.cap = cap
        self.claim_window_s = claim_window_s
        self._clock = clock
        self._visits: dict[str, Visit] = {}

    @property
    def in_use(self) -> int:
        self._drop_lapsed()
        return len(self._visits)

    def reserve(self, remote: str) -> Visit | None:
        """A new visit's slot, or None when the server is full."""
        if self.in_use >= self.cap:
            return None
        visit = Visit(secrets.token_urlsafe(16), remote, self._clock())
        self._visits[visit.visit_id] = visit
        return visit

    def claim(self, visit_id: str) -> Visit | None:
        """The reserved visit its page's websocket names; each reservation is claimed once."""
        self._drop_lapsed()
        visit = self._visits.get(visit_id)
        if visit is None or visit.claimed:
            return None
        visit.started_wall_s = time.time()
        return visit

    def release(self, visit_id: str) -> Visit | None:
        return self._visits.pop(visit_id, None)

    def running(self) -> list[Visit]:
        return [visit for visit in self._visits.values() if visit.claimed]

    def _drop_lapsed(self) -> None:
        now_s = self._clock()
        for visit_id, visit in list(self._visits.items()):
            if not visit.claimed and now_s - visit.reserved_at_s > self.claim_window_s:
                del self._visits[visit_id]
