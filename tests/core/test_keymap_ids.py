"""The key table's ids: one style (area.verb), unique, and every one remappable from a profile.

A profile's [keys] table names an id plain (`service.stop = "x"`, which TOML reads as a
table), quoted, or as an id of an earlier release (`service-stop`): each reads as the id.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tui.core.config import profile_problems
from tui.core.keymap import BY_ID, COMMANDS, LEGACY_IDS, ConsoleCommand

_ID = re.compile(r"[a-z0-9-]+\.[a-z0-9-]+")


def test_one_id_style_and_unique() -> None:
    ids = [command.binding_id for command in COMMANDS]
    assert [i for i in ids if not _ID.fullmatch(i)] == []
    assert len(ids) == len(set(ids))
    assert sorted(set(LEGACY_IDS.values()) - set(BY_ID)) == []
    assert set(LEGACY_IDS).isdisjoint(BY_ID)


def test_a_command_is_built_by_keyword_only() -> None:
    with pytest.raises(TypeError):
        ConsoleCommand("x.y", "x", "x", "X", "x")  # type: ignore[misc]


def _remap(tmp_path: Path, line: str) -> dict[str, str]:
    path = tmp_path / "p.toml"
    path.write_text(f"[keys]\n{line}\n")
    profile, problems = profile_problems(path)
    assert problems == [] and profile is not None, problems
    return dict(profile.keys)


@pytest.mark.parametrize("binding_id", sorted(BY_ID))
def test_every_id_remaps_plain_and_quoted(tmp_path: Path, binding_id: str) -> None:
    assert _remap(tmp_path, f'{binding_id} = "f5"') == {binding_id: "f5"}
    assert _remap(tmp_path, f'"{binding_id}" = "f6"') == {binding_id: "f6"}


@pytest.mark.parametrize("old", sorted(LEGACY_IDS))
def test_an_id_of_an_earlier_release_still_remaps(tmp_path: Path, old: str) -> None:
    assert _remap(tmp_path, f'{old} = "f7"') == {LEGACY_IDS[old]: "f7"}
