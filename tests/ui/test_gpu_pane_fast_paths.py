"""The GPU pane's fast paths draw exactly what the plain paths drew.

Cells split without Rich's parser, rows drawn from cached pieces, Static updates
without a layout and partial updates that render only the changed lines are
all checked against Rich's and Textual's own results, on real widgets.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import Static

from tests.support.gpu_boxes import GIB, loading_history, rtx_pro_6000_box, with_memory
from tui.screens.cropped_screen import CroppedScreen, LineCroppingCompositor
from widgets import gpu_format as fmt
from widgets.gpu_pane import GpuPane
from widgets.quiet_update import update_static
from widgets.table_cells import fit_pieces, markup_pieces

CONSOLE = Console()


def _rich_pieces(markup: str) -> list[tuple[str, Style]]:
    """What Rich draws for markup, as (text, style) with adjacent same-style runs joined."""
    segments = Segment.simplify(Text.from_markup(markup, end="").render(CONSOLE))
    return [(s.text, s.style or Style.null()) for s in segments if s.text]


def _our_pieces(markup: str) -> list[tuple[str, Style]]:
    pieces = markup_pieces(markup, lambda name: CONSOLE.get_style(name, default=Style.null()))
    segments = Segment.simplify(Segment(text, style or Style.null()) for text, style in pieces)
    return [(s.text, s.style or Style.null()) for s in segments if s.text]


REAL_CELLS = [
    fmt.memory_cell(50 * GIB, 96 * GIB, 10, 1),
    fmt.memory_cell(None, None, 5, 0),
    fmt.percent_cell(57.0, 10),
    fmt.percent_cell(None, 4),
    fmt.temperature_cell(88.0),
    fmt.power_cell(512.3, 700.0),
    fmt.pcie_link_cell(1, 16, 5),
    fmt.pcie_traffic_cell(1.2e9, 3e5),
    fmt.fill_cell(1.5 * GIB, True),
    f"[magenta]{fmt.sparkline([1.0, 50.0, 100.0], 12)}[/]",
    fmt.clip("name [with] brackets\\", 30),
    "[b]Σ[/]",
    "[bold red]LOST[/]",
    "[dim]── NUMA 0 ──[/]",
    "12:30 :smile: not an emoji?",
    "[green][/][dim]░░[/] 5",
    "[unknown-style]x[/]",
    "[1] not a tag",
    "",
]


def test_real_cells_split_like_rich() -> None:
    for markup in REAL_CELLS:
        assert _our_pieces(markup) == _rich_pieces(markup), markup


_flat_text = st.text(alphabet="ab █░▁:\\[]/", max_size=6)
_tags = st.sampled_from(["green", "dim", "bold red", "b", "cyan", "#ff0000", "/", "link=x"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), _tags), _flat_text), max_size=5))
def test_any_markup_splits_like_rich(parts: list[tuple[str | None, str]]) -> None:
    markup = "".join(text if tag is None else f"[{tag}]{text}[/]" for tag, text in parts)
    try:
        expected = _rich_pieces(markup)
    except Exception:  # markup Rich rejects is not ours to draw either
        return
    assert _our_pieces(markup) == expected, markup


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(REAL_CELLS), st.integers(min_value=0, max_value=30))
def test_fit_crops_and_pads_like_text_truncate(markup: str, width: int) -> None:
    text = Text.from_markup(markup, end="")
    text.truncate(width, overflow="crop", pad=True)
    expected = "".join(s.text for s in text.render(CONSOLE))
    pieces = markup_pieces(markup, lambda name: CONSOLE.get_style(name, default=Style.null()))
    fitted = fit_pieces(pieces, width)
    assert "".join(piece for piece, _ in fitted) == expected


class _CroppedApp(App[None]):
    """A header, the GPU pane and a footer on the console's line-cropping screen."""

    def __init__(self) -> None:
        super().__init__()
        self.snapshot, self.trends = loading_history()

    def get_default_screen(self) -> CroppedScreen:
        return CroppedScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield Static("header line", id="top")
        yield GpuPane(id="gpus")
        yield Static("footer line", id="bottom")

    def on_mount(self) -> None:
        self.query_one(GpuPane).update_view(self.snapshot, self.trends)


def _lines(chops: list[dict[int, object]], rows: list[int]) -> dict[int, list[tuple[str, str]]]:
    return {
        y: [
            (segment.text, str(segment.style))
            for cut in sorted(chops[y])
            if chops[y][cut] is not None
            for segment in chops[y][cut]
        ]
        for y in rows
    }


async def test_partial_updates_draw_the_lines_textual_would() -> None:
    app = _CroppedApp()
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        compositor = app.screen._compositor
        assert isinstance(compositor, LineCroppingCompositor)
        pane = app.query_one(GpuPane)
        pane.update_view(with_memory(app.snapshot, 2, 80 * GIB), app.trends)
        await pilot.pause()
        table = app.query_one("#gpu-table")
        crop = Region(0, table.region.y + 2, 160, 4)  # a few rows inside the table
        rows = list(range(crop.y, crop.bottom))
        ours = _lines(compositor._render_chops(crop, rows.__contains__), rows)
        # the same update through Textual's own _get_renders (every widget in full)
        compositor._get_renders = super(LineCroppingCompositor, compositor)._get_renders
        try:
            theirs = _lines(compositor._render_chops(crop, rows.__contains__), rows)
        finally:
            del compositor._get_renders
        assert ours == theirs
        assert any("80.0/95.6G" in "".join(t for t, _ in line) for line in ours.values())


class _StaticApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("one\ntwo", id="text")
        yield Static("below", id="below")


async def test_static_updates_ask_for_a_layout_only_when_the_height_may_change() -> None:
    app = _StaticApp()
    async with app.run_test(size=(40, 10)) as pilot:
        text = app.query_one("#text", Static)
        update_static(text, "one\ntwo")
        await pilot.pause()
        layouts = 0
        refresh_layout = app.screen._refresh_layout

        def counting(*args: object, **kwargs: object) -> None:
            nonlocal layouts
            layouts += 1
            refresh_layout(*args, **kwargs)

        app.screen._refresh_layout = counting  # type: ignore[method-assign]
        update_static(text, "[b]three[/]\nfour")  # same number of lines: no layout
        await pilot.pause()
        assert layouts == 0 and str(text.render()) == "three\nfour"
        update_static(text, "one\ntwo\nthree")  # one more line: the widget must grow
        await pilot.pause()
        assert layouts >= 1 and text.size.height == 3
        assert app.query_one("#below").region.y == 3
        update_static(text, "x" * 60 + "\ny\nz")  # wider than the screen: it may wrap
        await pilot.pause()
        assert text.size.height > 3


def test_churn_mode_moves_every_displayed_field(tmp_path) -> None:
    from tui.sim.gpu_model import SimGpuModel

    model = SimGpuModel(tmp_path, churn=True)
    first, second = model.snapshot(now_s=1000.0), model.snapshot(now_s=1001.0)
    fields = ("memory_used_bytes", "utilization_gpu_pct", "temperature_c", "power_w")
    fields += ("pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s", "sm_clock_mhz")
    for a, b in zip(first.samples, second.samples, strict=True):
        for name in fields:
            assert getattr(a, name) != getattr(b, name), name
        assert a.processes and b.processes
        assert a.processes[0].used_memory_bytes != b.processes[0].used_memory_bytes
    assert len(first.samples) == 8
    still = SimGpuModel(tmp_path).snapshot(now_s=1000.0)
    assert all(not sample.processes for sample in still.samples)  # no churn: no load


def test_rtx_box_cells_render_the_same_through_the_pane() -> None:
    """Every cell the pane builds for a real box splits like Rich (a wide sample)."""
    from widgets.gpu_rows import _gpu_cells, layout_for

    snapshot, trends = loading_history()
    statics = {static.index: static for static in snapshot.statics}
    for width in (200, 120, 80):
        for sample in (*snapshot.samples, *rtx_pro_6000_box().samples):
            layout = layout_for(width)
            cells = _gpu_cells(statics.get(sample.index), sample, trends.get(sample.index), layout)
            for markup in cells.values():
                assert _our_pieces(markup) == _rich_pieces(markup), markup
