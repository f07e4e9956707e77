"""Processes pane: o cycles the sort (memory, pid, class, user, SM), / filters, Escape clears;
the SM % column states each GPU holder's SM share, `?` where unknown, `-` holding no GPU."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from textual.widgets.data_table import ColumnKey

from tests.support.procs_app import ProcsTestApp
from tests.ui.test_procs_ui import GIB, NOW_S, gpu_process, listing
from tui.procs.model import GpuMemoryShare
from tui.procs.order import SORTS, matches, next_sort, ordered
from widgets.procs_pane import ProcsPane, row_key

PROCS = listing(
    replace(gpu_process(4300, "foreign", 3.1, "python3 notebook.py"), user="alice"),
    gpu_process(4101, "service", 88.5, "vllm serve /models/kimi --tensor-parallel-size 8"),
    replace(gpu_process(4177, "leftover", 84.2, "VLLM::Worker_TP1"), user="root"),
    replace(gpu_process(4200, "suspect", 1.0, "VLLM::EngineCore"), gpus=()),  # memory unknown
)


def _pids(pane: ProcsPane) -> list[int]:
    return [int(str(pane.get_row_at(row)[1])) for row in range(pane.row_count)]


def test_each_sort_orders_the_listing() -> None:
    procs = PROCS.processes
    assert [p.pid for p in ordered(procs, "memory")] == [4101, 4177, 4300, 4200]  # unknown last
    assert [p.pid for p in ordered(procs, "pid")] == [4101, 4177, 4200, 4300]
    assert [p.pid for p in ordered(procs, "class")] == [4101, 4177, 4200, 4300]
    assert [p.pid for p in ordered(procs, "user")] == [4300, 4177, 4101, 4200]
    assert [next_sort(s) for s in SORTS] == [*SORTS[1:], SORTS[0]]


@given(st.text(max_size=6), st.sampled_from(SORTS))
def test_the_filter_keeps_exactly_the_matching_processes(text: str, sort: str) -> None:
    kept = ordered(PROCS.processes, sort, text)
    assert {p.pid for p in kept} == {p.pid for p in PROCS.processes if matches(p, text)}
    assert sorted(kept, key=lambda p: p.pid) == sorted(
        [p for p in PROCS.processes if matches(p, text)], key=lambda p: p.pid
    )


async def test_sort_key_and_filter_in_the_pane() -> None:
    app = ProcsTestApp(PROCS, NOW_S)
    async with app.run_test(size=(100, 24)) as pilot:
        pane = app.query_one(ProcsPane)
        pane.focus()
        await pilot.pause()
        assert _pids(pane) == [4101, 4177, 4300, 4200]  # memory first
        pane.move_cursor(row=1)  # 4177
        await pilot.press("o")  # pid
        await pilot.pause()
        assert pane.sort_by == "pid" and _pids(pane) == [4101, 4177, 4200, 4300]
        assert pane.selected() is not None and pane.selected().pid == 4177  # type: ignore[union-attr]
        await pilot.press("o", "o")  # class, user
        await pilot.pause()
        assert _pids(pane) == [4300, 4177, 4101, 4200]
        await pilot.press("slash", "v", "l", "l", "m", "k")  # k types, it does not kill
        await pilot.pause()
        assert pane.filter_text == "vllmk" and _pids(pane) == []
        await pilot.press("backspace", "backspace", "enter")
        await pilot.pause()
        assert _pids(pane) == [4177, 4101, 4200] and not pane.typing
        assert "filter: vll" in str(pane.border_title)
        assert len(pane.processes) == 4  # the kill of leftovers still sees the whole listing
        pane.show_listing(PROCS, NOW_S + 5)  # a refresh keeps the filter
        await pilot.pause()
        assert _pids(pane) == [4177, 4101, 4200]
        await pilot.press("escape")
        await pilot.pause()
        assert pane.filter_text == "" and len(_pids(pane)) == 4 and pane.border_title is None
        assert app.reports == []  # no key typed into the filter reached the app


SM = listing(
    replace(gpu_process(4101, "service", 80.0, "VLLM::Worker_TP0"),  # does no work
            gpus=(GpuMemoryShare(0, 80 * GIB, 0.0),)),
    replace(gpu_process(4102, "service", 80.0, "VLLM::Worker_TP1"),
            gpus=(GpuMemoryShare(1, 80 * GIB, 93.4),)),
    replace(gpu_process(4177, "leftover", 84.2, "VLLM::Worker_TP2"),
            gpus=(GpuMemoryShare(2, 84 * GIB, 12.0), GpuMemoryShare(3, GIB, None))),
    replace(gpu_process(4200, "suspect", 1.0, "VLLM::EngineCore"), gpus=()),  # no GPU
)  # fmt: skip


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_sm_column_states_known_unknown_and_no_gpu_and_sorts(
    size: tuple[int, int],
) -> None:
    app = ProcsTestApp(SM, NOW_S)
    async with app.run_test(size=size) as pilot:
        pane = app.query_one(ProcsPane)
        pane.focus()
        await pilot.pause()
        cells = {p.pid: str(pane.get_cell(row_key(p.identity), "sm")) for p in SM.processes}
        # 4177's GPU 3 does not say: the busier GPU may be that one, so unknown, never 12
        assert cells == {4101: "0", 4102: "93", 4177: "?", 4200: "-"}
        columns = [column.key.value for column in pane.ordered_columns]
        before = columns[: columns.index("sm")]
        right_edge = sum(pane.columns[ColumnKey(k)].get_render_width(pane) for k in before)
        right_edge += pane.columns[ColumnKey("sm")].get_render_width(pane)
        assert right_edge <= size[0], "the SM column is drawn whole without scrolling"
        for _ in range(SORTS.index("sm")):
            await pilot.press("o")
        await pilot.pause()
        assert pane.sort_by == "sm" and _pids(pane) == [4102, 4101, 4177, 4200]
        assert "SM % ▼" in str(pane.columns[ColumnKey("sm")].label)
