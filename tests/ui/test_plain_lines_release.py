"""A changed line's old Strips are freed when it is redrawn, not left for the garbage collector.

The compositor divides each drawn Strip at the screen's cuts, and a Strip kept whole
caches itself in its divide cache: a reference cycle. With every GPU row changing each
tick that was a few hundred objects a tick for the collector; plain_lines.release
breaks the cycle when the line is replaced, so reference counting frees them.
"""

from __future__ import annotations

import gc

from textual.strip import Strip

from tests.support.gpu_boxes import GIB, loading_history, with_memory
from tests.support.gpu_pane_app import GpuPaneApp
from tui.screens.cropped_screen import CroppedScreen
from widgets.gpu_pane import GpuPane
from widgets.gpu_table import GpuTable


class CroppingGpuPaneApp(GpuPaneApp):
    def get_default_screen(self) -> CroppedScreen:
        return CroppedScreen()


async def test_a_redrawn_rows_old_strips_are_freed_without_a_collection() -> None:
    snapshot, trends = loading_history()
    for app in (GpuPaneApp(snapshot, trends), CroppingGpuPaneApp(snapshot, trends)):
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            table = app.query_one(GpuTable)
            y = table.row_keys.index("gpu-2") + 1  # under the header
            old = table._styles_cache._cache[y]
            drawn = [old, *old._filter_cache._cache.values()]
            assert any(strip._divide_cache for strip in drawn)  # the compositor divided it
            old_ids = {id(strip) for strip in drawn}
            del old, drawn
            gc.collect()
            gc.disable()
            try:
                pane = app.query_one(GpuPane)
                pane.update_view(with_memory(snapshot, 2, 80 * GIB), trends)
                await pilot.pause()
                assert "80.0/95.6G" in table._styles_cache._cache[y].text  # drawn again
                assert _strips_in_cycles() & old_ids == set()
            finally:
                gc.enable()


def _strips_in_cycles() -> set[int]:
    """The Strips only a collection would free (ids), from what the collector finds now."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return {id(thing) for thing in gc.garbage if isinstance(thing, Strip)}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
