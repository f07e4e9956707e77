"""An idle console wakes its event loop only for what changes: counted, not timed.

Each wake-up of the main thread costs CPU that nvitop does not spend (issue: the console's
whole cost below nvitop). Polls that looked at something twice a second for a note that
could wait (the connection clock, the kernel-log watch) woke it 8.5 times a second on an
idle local profile, 6.5 with the connection clock ticking each second for no connection
(4.5 once it sleeps on a local host); the bound keeps them from creeping back. A loaded
machine only makes timers late, never more frequent, so the count holds under load.
"""

from __future__ import annotations

import asyncio
import collections

from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.config import Profile

WINDOW_S = 10.0
MAX_WAKEUPS_PER_S = 5.5


async def test_an_idle_console_wakes_at_most_a_few_times_a_second() -> None:
    profile = Profile(name="local")
    app = ServedeckApp(profile, open_deck(profile))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(4)  # past the first reads
        woken: collections.Counter[str] = collections.Counter()
        run = asyncio.events.Handle._run

        def counted(handle: asyncio.events.Handle) -> None:
            owner = getattr(handle._callback, "__self__", None)  # type: ignore[attr-defined]
            name = getattr(handle._callback, "__qualname__", "?")  # type: ignore[attr-defined]
            if isinstance(owner, asyncio.Task):
                name = owner.get_coro().__qualname__  # type: ignore[union-attr]
            woken[name] += 1
            run(handle)

        asyncio.events.Handle._run = counted  # type: ignore[method-assign,assignment]
        try:
            await asyncio.sleep(WINDOW_S)
        finally:
            asyncio.events.Handle._run = run  # type: ignore[method-assign]
        per_s = sum(woken.values()) / WINDOW_S
        assert per_s <= MAX_WAKEUPS_PER_S, f"{per_s:.1f} wake-ups/s: {woken.most_common(8)}"
