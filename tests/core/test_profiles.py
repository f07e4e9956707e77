"""Profiles: the shipped ones load, and every malformed one fails with one clear line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tui.core.config import load_profile_file, profile_problems
from tui.core.errors import ProfileError, UsageError
from tui.core.profile_store import init_profile, list_profiles, resolve_profile_path

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "profiles").glob("*.toml"))


def run_cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
    )


def test_shipped_profiles_cover_the_seed_deployments() -> None:
    names = {path.stem for path in SHIPPED}
    assert {
        "demo",
        "local-vllm",
        "kimi-k25-int4-lxc",
        "minimax-m25-tp4",
        "minimax-m25-tp8-ep",
    } <= names
    kimi = load_profile_file(REPO / "profiles" / "kimi-k25-int4-lxc.toml")
    assert kimi.host.kind == "ssh" and len(kimi.host.jump) == 1
    assert kimi.service.unit == "vllm-kimi-k25-int4.service"
    assert kimi.service.port == 8000
    assert kimi.model.tp == 8
    assert kimi.host.route == "root@10.10.0.21 via root@pve.lab.example"
    minimax_ep = load_profile_file(REPO / "profiles" / "minimax-m25-tp8-ep.toml")
    assert minimax_ep.model.tp == 8 and minimax_ep.model.ep
    minimax_tp4 = load_profile_file(REPO / "profiles" / "minimax-m25-tp4.toml")
    assert minimax_tp4.model.tp == 4 and not minimax_tp4.model.ep


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: path.stem)
def test_every_shipped_profile_is_valid(path: Path) -> None:
    profile, problems = profile_problems(path)
    assert problems == []
    assert profile is not None and profile.name


# (file content, text the one-line error must contain)
MALFORMED: list[tuple[str, str]] = [
    ("[host\nkind = 'local'", ":1:"),  # unclosed table header: file:line:column
    ("name = \n", ":1:"),
    ("[service]\nport = 8000 8001\n", ":2:"),
    ("[model]\ntp = 8\ntp = 4\n", ":3:"),  # duplicate key
    ("[service]\nbase_url = 'http://127.0.0.1:8000\n", ":3:"),  # unterminated string
    ("[host]\nkind = 'kubernetes'\n", "host.kind: expected one of 'local', 'ssh', 'demo'"),
    ("[host]\nkind = 'ssh'\n", "host.hostname: expected a host name"),
    (
        "[host]\nkind = 'ssh'\nhostname = 'box'\nport = 70000\n",
        "host.port: expected an integer from 1 to 65535",
    ),
    ("[host]\nport = '22'\n", "host.port: expected an integer"),
    ("[host]\nhostnme = 'box'\n", "host.hostnme: unknown key (did you mean 'hostname'?)"),
    ("[[host.jump]]\nport = 22\n", "host.jump[0].hostname"),
    ("[host]\njump = 'pve'\n", "host.jump: expected an array of tables"),
    ("[service]\nengine = 'tgi'\n", "service.engine: expected one of 'vllm', 'sglang'"),
    ("[service]\nport = 8000\n", "service.port: unknown key"),
    (
        "[service]\nbase_url = 'localhost:8000'\n",
        "service.base_url: expected an http:// or https:// URL",
    ),
    ("[service]\nbase_url = 'http://127.0.0.1:99999'\n", "service.base_url: expected a port"),
    ("[service]\nunit = 'vllm'\n", "service.unit: expected a systemd unit name"),
    (
        "[service]\napi_key_env = 'sk-live-abcdef1234567890'\n",
        "service.api_key_env: expected the NAME",
    ),
    ("[service]\nuse_sudo = 'yes'\n", "service.use_sudo: expected true or false"),
    (
        "[service]\nprocess_patterns = [1, 2]\n",
        "service.process_patterns: expected an array of strings",
    ),
    ("[model]\ntp = 0\n", "model.tp: expected an integer from 1 to 1024, got 0"),
    ("[model]\ntp = 2.5\n", "model.tp: expected an integer"),
    ("[model]\nep = 1\n", "model.ep: expected true or false"),
    ("model = 'kimi'\n", "model: expected a table"),
    ("[gpu]\nrefresh_s = 0.1\n", "gpu.refresh_s: expected a number from 0.25 to 10"),
    ("[gpu]\nrefresh = 1\n", "gpu.refresh: unknown key (did you mean 'refresh_s'?)"),
    (
        "[benchmark]\ndefault_preset = 'fastest'\n",
        "benchmark.default_preset: expected one of the presets",
    ),
    ("[benchmark.presets.sweep]\nconcurrency = [1, 0]\n", "benchmark.presets.sweep.concurrency"),
    ("[benchmark.presets.quick]\nendpoint = 'embeddings'\n", "benchmark.presets.quick.endpoint"),
    ("[handoff]\nlessons = 3\n", "handoff.lessons: expected an array of strings"),
    (
        "[handoff]\nnext_step = ['x']\n",
        "handoff.next_step: unknown key (did you mean 'next_steps'?)",
    ),
    ("colour = 'blue'\n", "colour: unknown key"),
    ("read_only = 'no'\n", "read_only: expected true or false"),
]


@pytest.mark.parametrize(
    ("content", "expected"), MALFORMED, ids=[f"bad{i:02d}" for i in range(len(MALFORMED))]
)
def test_malformed_profile_gives_one_clear_line(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "broken.toml"
    path.write_text(content)
    with pytest.raises(ProfileError) as raised:
        load_profile_file(path)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert expected in message


def test_malformed_profiles_through_the_cli_exit_2_without_traceback(tmp_path: Path) -> None:
    assert len(MALFORMED) >= 20
    paths = []
    for index, (content, _) in enumerate(MALFORMED):
        path = tmp_path / f"bad{index:02d}.toml"
        path.write_text(content)
        paths.append(str(path))
    result = run_cli("profiles", "check", *paths)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    for path, (_, expected) in zip(paths, MALFORMED, strict=True):
        assert any(
            line.startswith(path) and expected in line for line in result.stderr.splitlines()
        ), path
    # Opening the console on a broken profile is the same one line, exit 2.
    opened = run_cli("--profile", paths[7])
    assert opened.returncode == 2
    assert opened.stderr.count("\n") == 1 and "host.port" in opened.stderr


def test_a_secret_put_where_a_name_belongs_is_not_echoed(tmp_path: Path) -> None:
    path = tmp_path / "leaky.toml"
    path.write_text("[service]\napi_key_env = 'sk-live-abcdef1234567890'\n")
    result = run_cli("profiles", "check", str(path))
    assert result.returncode == 2
    assert "abcdef1234567890" not in result.stderr


def test_unreadable_inputs(tmp_path: Path) -> None:
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00bad")
    assert "not UTF-8" in profile_problems(tmp_path / "binary.toml")[1][0]
    (tmp_path / "folder.toml").mkdir()
    assert "is a directory" in profile_problems(tmp_path / "folder.toml")[1][0]
    assert "no such file" in profile_problems(tmp_path / "missing.toml")[1][0]
    with pytest.raises(ProfileError, match="not found"):
        resolve_profile_path("no-such-profile-anywhere")


def test_init_writes_a_valid_starter_and_never_overwrites(tmp_path: Path) -> None:
    path = init_profile("gpu-box", tmp_path)
    profile, problems = profile_problems(path)
    assert problems == [] and profile is not None
    before = path.read_text()
    path.write_text(before + "\n# my edits\n")
    with pytest.raises(UsageError, match="already exists"):
        init_profile("gpu-box", tmp_path)
    assert path.read_text().endswith("# my edits\n")
    with pytest.raises(UsageError):
        init_profile("../escape", tmp_path)


def test_lookup_order_path_then_project_then_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tui.core import paths

    user_dir = paths.user_profiles_dir()
    user_dir.mkdir(parents=True)
    (user_dir / "mine.toml").write_text("description = 'user'\n")
    (user_dir / "demo.toml").write_text("description = 'user demo'\n")
    monkeypatch.chdir(REPO)
    assert resolve_profile_path("mine") == user_dir / "mine.toml"
    assert resolve_profile_path("demo") == Path.cwd() / "profiles" / "demo.toml"
    assert resolve_profile_path(str(user_dir / "demo.toml")) == user_dir / "demo.toml"
    names = [(entry.name, entry.where) for entry in list_profiles()]
    assert ("demo", "project") in names and ("demo", "user") in names and ("mine", "user") in names


def test_profiles_list_and_init_cli(tmp_path: Path) -> None:
    listed = run_cli("profiles", "list")
    assert listed.returncode == 0
    assert "kimi-k25-int4-lxc" in listed.stdout and "via root@pve.lab.example" in listed.stdout
    created = run_cli("profiles", "init", "box", "--dir", str(tmp_path))
    assert created.returncode == 0 and (tmp_path / "box.toml").exists()
    again = run_cli("profiles", "init", "box", "--dir", str(tmp_path))
    assert again.returncode == 2 and "already exists" in again.stderr
