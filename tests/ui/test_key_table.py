"""Every key of every App, Screen and Widget comes from the one key table (tui/core/keymap.py).

Walks the classes of tui/app/, tui/screens/ and widgets/: each Binding they declare has an
id of the table with the table's key and action, so a [keys] table remaps it; each entry of
the table is bound by some class. Then through the real Fleet and replay apps: a group file's
[keys] moves a Fleet key, and `?` lists the keys of the app on show, not the console's.
The Fleet's rows come from a fixed row source (the pane only draws rows it is given; the
collector and its hosts are not what is tested here).
"""

from __future__ import annotations

import importlib
import io
import pkgutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from textual.binding import Binding
from textual.dom import DOMNode
from textual.widgets import Static

import tui.app
import tui.screens
import widgets
from tests.support.record_synth import build_night
from tests.support.screen_text import screen_text
from tui.app.fleet_app import FleetApp
from tui.app.replay_app import ReplayApp
from tui.core.keymap import BY_ID, COMMANDS
from tui.fleet.deck_probe import HostProbe
from tui.fleet.groups import load_group_file
from tui.fleet.model import FleetRow
from tui.screens.help import HelpScreen
from tui.screens.replay import ReplayScreen

REPO = Path(__file__).resolve().parents[2]
ROWS = [
    FleetRow("box-a", True, unit_state="active", phase="serving", gpu_count=8),
    FleetRow("box-b", True, unit_state="failed", phase="failed", gpu_count=8),
]


def _shown(app: FleetApp | ReplayApp, selector: str) -> str:
    """The text of one of the help screen's tables, one line a key (wide enough not to wrap)."""
    console = Console(file=io.StringIO(), width=400)
    with console.capture() as capture:
        console.print(app.screen.query_one(selector, Static).content)
    return capture.get()


def _ui_classes() -> Iterator[type[DOMNode]]:
    for package in (tui.app, tui.screens, widgets):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if (
                    isinstance(value, type)
                    and issubclass(value, DOMNode)
                    and value.__module__ == module.__name__
                ):
                    yield value


def _declared() -> list[tuple[str, Binding | object]]:
    return [
        (cls.__qualname__, binding)
        for cls in _ui_classes()
        for binding in cls.__dict__.get("BINDINGS", [])
    ]


def test_every_binding_of_every_class_is_an_entry_of_the_table() -> None:
    declared = _declared()
    assert len(declared) > 60, "the walk found the classes"
    wrong = []
    for owner, binding in declared:
        command = BY_ID.get(binding.id or "") if isinstance(binding, Binding) else None
        if command is None or (command.key, command.action) != (binding.key, binding.action):  # type: ignore[union-attr]
            wrong.append((owner, binding))
    assert wrong == [], f"bindings not from tui/core/keymap.py: {wrong}"


def test_every_entry_of_the_table_is_bound() -> None:
    bound = {binding.id for _owner, binding in _declared() if isinstance(binding, Binding)}
    # procs.move documents the arrows Textual's DataTable binds itself.
    unbound = sorted(c.binding_id for c in COMMANDS if c.binding_id not in bound)
    assert unbound == ["procs.move"]


class _Rows:
    """A FleetRowSource of fixed rows."""

    problems: tuple[str, ...] = ()

    async def refresh(self) -> list[FleetRow]:
        return list(ROWS)

    def next_interval_s(self, base_s: float) -> float:
        return 60.0

    def probe(self, name: str) -> HostProbe | None:
        return None

    async def close(self) -> None:
        return None


def _group_keys(tmp_path: Path, keys: str) -> dict[str, str]:
    path = tmp_path / "lab.toml"
    member = REPO / "profiles" / "local-vllm.toml"
    path.write_text(f'[fleet]\nhosts = ["{member}"]\n{keys}')
    return dict(load_group_file(path).keys)


async def test_a_group_files_keys_move_a_fleet_key(tmp_path: Path) -> None:
    keys = _group_keys(tmp_path, '[keys]\nfleet.sort = "o"\n"fleet.reverse" = "ctrl+r"\n')
    assert keys == {"fleet.sort": "o", "fleet.reverse": "ctrl+r"}
    app = FleetApp(_Rows(), keys=keys)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause(0.2)
        assert app.sort_column == "state"
        await pilot.press("s")  # no longer Sort
        assert app.sort_column == "state"
        await pilot.press("o")
        assert app.sort_column == "unit"
        await pilot.press("r")
        assert not app.descending
        await pilot.press("ctrl+r")
        assert app.descending
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HelpScreen)
        here = _shown(app, "#help-here")
        assert "Sort by the next column" in here and "Reverse the sort order" in here
        rows = {line.split()[0]: line for line in here.splitlines() if line.strip()}
        assert "Sort by the next column" in rows["o"] and "Reverse" in rows["ctrl+r"], here
        text = screen_text(app)
        assert "Start the service" not in text and "Search the log" not in text, text


async def test_the_fleets_help_lists_its_keys_then_the_dialogs() -> None:
    app = FleetApp(_Rows())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HelpScreen)
        here = _shown(app, "#help-here")
        for command in (c for c in COMMANDS if c.scope == "fleet"):
            assert command.help in here, command.binding_id
        elsewhere = _shown(app, "#help-elsewhere")
        assert "Close the dialog without acting" in elsewhere
        assert "Timeline" not in elsewhere and "Everywhere" not in elsewhere
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert not isinstance(app.screen, HelpScreen)


@pytest.fixture
def night(tmp_path: Path) -> Path:
    db = tmp_path / "night.sqlite"
    build_night(db, 1_800_000_000.0)
    return db


async def test_the_replays_help_lists_the_replays_keys_as_remapped(night: Path) -> None:
    app = ReplayApp(night, 1_800_000_020.0, "box", keys={"replay.back": "comma"})
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + 20
        while not (isinstance(app.screen, ReplayScreen) and app.screen.state is not None):
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HelpScreen)
        here = _shown(app, "#help-here")
        for command in (c for c in COMMANDS if c.scope == "replay"):
            assert command.help in here, command.binding_id
        assert "comma" in here
        assert "Start the service" not in screen_text(app)
