"""Processes pane: o cycles the sort (memory, pid, class, user), / filters, Escape clears."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from tests.support.procs_app import ProcsTestApp
from tests.ui.test_procs_ui import NOW_S, gpu_process, listing
from tui.procs.order import SORTS, matches, next_sort, ordered
from widgets.procs_pane import ProcsPane

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
