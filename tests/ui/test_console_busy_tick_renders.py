"""A busy GPU tick on the whole console: the compositor passes over the widgets beside it.

The console's screen holds ~35 visible widgets (header, tabs, panes, containers, footer);
a busy tick changes a GPU row or two. The line-cropping compositor's partial update looks
at each visible widget; one with no line in the update is passed over on integers, before
any Region is built for it. Counted, not timed: the Region intersections that pass makes.
"""

from __future__ import annotations

import sys

import pytest
from textual.geometry import Region

from tests.support.gpu_boxes import busy_tick, rtx_pro_6000_box
from tui.app import ServedeckApp
from tui.compose import open_deck
from tui.core.config import Profile

TICKS = 8


async def test_a_busy_tick_builds_no_region_for_the_widgets_beside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    profile = Profile(name="local")
    app = ServedeckApp(profile, open_deck(profile))
    snapshot = rtx_pro_6000_box()
    async with app.run_test(size=(160, 50)) as pilot:
        app.gpus.show(snapshot)
        await pilot.pause(0.5)
        compositor = app.screen._compositor
        intersections: list[int] = []
        intersection = Region.intersection

        def counted(self: Region, other: Region) -> Region:
            if sys._getframe(1).f_code.co_name == "_get_renders":  # the compositor's pass
                intersections.append(1)
            return intersection(self, other)

        monkeypatch.setattr(Region, "intersection", counted)
        for tick in range(1, TICKS + 1):
            app.gpus.show(busy_tick(snapshot, tick))
            await pilot.pause()
        visible = len(compositor.visible_widgets)
        assert visible >= 20  # the whole console, not a pane alone
        # Before, two intersections per visible widget a tick (68 of 34 widgets: 544 over
        # the ticks); now two for each widget under the changed rows (the table and the
        # containers behind it, ~15): under half.
        assert len(intersections) <= visible * TICKS, (len(intersections), visible)
