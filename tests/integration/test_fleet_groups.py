"""Host groups: found beside the profiles, members with labels, one-line errors naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.core.errors import ProfileError
from tui.fleet.groups import adhoc_group, load_group

PROFILE = '[host]\nkind = "ssh"\nhostname = "{name}.example"\n[service]\nunit = "vllm.service"\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    profiles = tmp_path / "profiles"
    (profiles / "groups").mkdir(parents=True)
    for name in ("kimi", "glm", "minimax"):
        (profiles / f"{name}.toml").write_text(PROFILE.format(name=name))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SERVEDECK_CONFIG_DIR", str(tmp_path / "config"))
    return profiles


def _group(project: Path, text: str, name: str = "lab") -> Path:
    path = project / "groups" / f"{name}.toml"
    path.write_text(text)
    return path


def test_group_by_name_with_plain_and_labelled_members(project: Path) -> None:
    _group(
        project,
        '[fleet]\ndescription = "serving"\nhosts = ["kimi", "glm"]\n'
        '[[fleet.host]]\nprofile = "../minimax.toml"\nlabel = "MiniMax TP4"\n',
    )
    group = load_group("lab")
    assert [(m.name, m.label) for m in group.members] == [
        ("kimi", ""),
        ("glm", ""),
        ("minimax", "MiniMax TP4"),
    ]
    assert group.description == "serving"
    assert all(m.profile.host.kind == "ssh" for m in group.members)
    assert load_group("lab", read_only=True).members[0].profile.read_only


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('hosts = ["kimi"]\n', "fleet: missing (a group file has a [fleet] table)"),
        ("[fleet]\n", "fleet.hosts: expected at least one member profile"),
        ('[fleet]\nhosts = ["kimi", "nope"]\n', "fleet.hosts[1]: profile 'nope' not found"),
        ('[fleet]\nhost = [{label = "x"}]\n', "fleet.host[0].profile: missing"),
        ('[fleet]\nhosts = ["kimi"]\nlabel = "x"\n', "fleet.label: unknown key"),
        ('[fleet]\nhosts = ["kimi", "kimi"]\n', "fleet.hosts[1]: profile 'kimi' is already"),
        ("[fleet]\nhosts = 3\n", "fleet.hosts: expected an array of strings"),
        ("[fleet\n", "TOML syntax error"),
    ],
)
def test_bad_group_is_one_line_naming_file_and_key(project: Path, text: str, expected: str) -> None:
    path = _group(project, text)
    with pytest.raises(ProfileError) as caught:
        load_group("lab")
    message = str(caught.value)
    assert message.startswith(str(path)) and expected in message
    assert "\n" not in message


def test_bad_member_profile_names_the_group_key_and_the_profile_problem(project: Path) -> None:
    (project / "glm.toml").write_text('[host]\nkind = "sssh"\n')
    path = _group(project, '[fleet]\nhosts = ["kimi", "glm"]\n')
    with pytest.raises(ProfileError, match=r"fleet\.hosts\[1\]: .*glm\.toml: host\.kind") as caught:
        load_group(str(path))
    assert str(caught.value).startswith(str(path))


def test_missing_group_says_where_it_looked(project: Path) -> None:
    with pytest.raises(
        ProfileError, match=r"group 'nope' not found \(looked in .*groups/nope\.toml"
    ):
        load_group("nope")


def test_adhoc_group_from_profile_names(project: Path) -> None:
    assert [m.name for m in adhoc_group(["kimi", "glm"]).members] == ["kimi", "glm"]
