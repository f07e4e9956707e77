"""Hostile profiles: nothing a profile file holds or is makes servedeck crash, hang or accept it.

Each example from issue 16 has a regression test; hypothesis then fuzzes the
loader with arbitrary text and TOML-shaped documents, with a deadline.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.cli import main
from tui.core.config import profile_problems, read_profile_bytes
from tui.core.errors import ProfileError

FUZZ = settings(
    max_examples=150,
    deadline=2000,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _one_line_problem(path: Path) -> str:
    profile, problems = profile_problems(path)
    assert profile is None
    assert problems, "a bad profile must report a problem"
    for problem in problems:
        assert "\n" not in problem
        assert problem.startswith(str(path))
    return problems[0]


@pytest.mark.parametrize("depth", [300, 5000])
@pytest.mark.parametrize("kind", ["array", "inline-table"])
def test_deeply_nested_profile_is_one_line_error(tmp_path: Path, depth: int, kind: str) -> None:
    opening, closing = ("[", "]") if kind == "array" else ("{a = ", "}")
    path = tmp_path / "deep.toml"
    path.write_text(f"description = {opening * depth}1{closing * depth}\n")
    _one_line_problem(path)


def test_deep_profile_through_the_cli_is_one_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * 4000 + "]" * 4000 + "\n")
    status = main(["profiles", "check", str(path)])
    captured = capsys.readouterr()
    assert status != 0
    assert "Traceback" not in captured.err + captured.out
    assert str(path) in captured.err + captured.out


def test_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    started = time.monotonic()
    problem = _one_line_problem(fifo)
    assert time.monotonic() - started < 5
    assert "not a regular file" in problem


def test_dev_zero_is_refused_without_reading_it() -> None:
    problem = _one_line_problem(Path("/dev/zero"))
    assert "not a regular file" in problem


def test_oversized_profile_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_bytes(b"# " + b"x" * (2 * 1024 * 1024) + b"\n")
    assert "limit" in _one_line_problem(path)


def test_read_timeout_is_honoured(tmp_path: Path) -> None:
    path = tmp_path / "ok.toml"
    path.write_text('name = "ok"\n')
    assert read_profile_bytes(path, timeout_s=5) == b'name = "ok"\n'
    with pytest.raises(ProfileError, match="limit"):
        read_profile_bytes(path, max_bytes=4)


# ---- validation gaps ---------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('[service]\nbase_url = "http://127.0.0.1:0"\n', "service.base_url: expected a port"),
        ('[host]\nkind = "ssh"\nhostname = "box"\njump = []\n', "host.jump: expected at least"),
        (
            '[host]\nkind = "ssh"\nhostname = "box"\n'
            '[[host.jump]]\nhostname = "pve"\n[[host.jump]]\nhostname = "pve"\n',
            "the chain loops",
        ),
        (
            '[host]\nkind = "ssh"\nhostname = "box"\n[[host.jump]]\nhostname = "box"\n',
            "the chain loops",
        ),
        ('[service]\napi_key_env = "hf_abcdefghijklmnopqrstuvwxyz"\n', "looks like a secret"),
        ('[service]\napi_key_env = "sk-proj-0123456789abcdef"\n', "looks like a secret"),
        ("[gpu]\nrefresh_s = nan\n", "gpu.refresh_s: expected a number"),
        ("[gpu]\nrefresh_s = inf\n", "gpu.refresh_s"),
        ("[benchmark.presets.quick]\ntemperature = nan\n", "temperature"),
        ("[benchmark.presets.quick]\nrequest_rate = [nan]\n", "request_rate"),
        ('[service]\nunit = "vllm.service\\n"\n', "service.unit"),
        ('[service]\nunit = "evil\\nx.service"\n', "service.unit"),
        ('[service]\napi_key_env = "KEY\\n"\n', "service.api_key_env"),
        ('[keys]\nhlep = "f1"\n', "keys.hlep: unknown binding id (did you mean 'app.help'?)"),
        ('[keys]\nhelp = "ctlr+k"\n', "unknown modifier 'ctlr'"),
        ('[keys]\nhelp = "escpae"\n', "did you mean 'escape'?"),
        ('[keys]\nhelp = "a,,b"\n', "empty key"),
        ('[keys]\nbench = "q"\n', "'q' is reserved"),
        ('[keys]\nrefresh = "question_mark"\n', "reserved"),
        ('[keys]\nsummary = "escape"\n', "reserved"),
        (
            '[keys]\nservice.stopp = "x"\n',
            "keys.service.stopp: unknown binding id (did you mean 'service.stop'?)",
        ),
        ('[keys]\nfleet.sort = "q"\n', "keys.fleet.sort: 'q' is reserved"),
        ("[keys.fleet]\nsort = 3\n", "keys.fleet.sort: expected a key name"),
    ],
)
def test_validation_gap_is_a_clear_error(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(content)
    problems = profile_problems(path)[1]
    assert problems, f"accepted: {content!r}"
    assert any(expected in problem for problem in problems), problems
    assert all("\n" not in problem for problem in problems)


@pytest.mark.parametrize(
    "content",
    [
        '[keys]\nhelp = "f1"\nservice-stop = "ctrl+x"\n',
        '[keys]\nquit = "q,ctrl+q"\nbench = "ctrl+b"\nplan = "exclamation_mark"\n',
        '[keys]\napp.quit = "q,ctrl+q"\n"service.stop" = "ctrl+x"\nfleet.quit = "q,f10"\n',
        '[keys.fleet]\nsort = "o"\nclear = "escape,ctrl+l"\n',
        '[service]\napi_key_env = "VLLM_API_KEY"\nbase_url = "http://127.0.0.1:8000"\n',
        '[host]\nkind = "ssh"\nhostname = "ct"\n[[host.jump]]\nhostname = "pve"\n',
    ],
)
def test_valid_profiles_still_load(tmp_path: Path, content: str) -> None:
    path = tmp_path / "good.toml"
    path.write_text(content)
    assert profile_problems(path)[1] == []


def test_every_key_name_textual_knows_for_a_character_is_accepted() -> None:
    """The hand-kept key name list agrees with Textual's own names for printable characters."""
    import string

    from textual.keys import _character_to_key

    from tui.core.keynames import key_problem

    for character in string.ascii_letters + string.digits + string.punctuation:
        name = _character_to_key(character)
        assert key_problem(f"ctrl+{name}") is None, name


# ---- fuzzing -----------------------------------------------------------------
_toml_scalar = st.one_of(
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda v: repr(v).replace("inf", "inf")),
    st.text(max_size=20).map(lambda v: '"' + v.replace("\\", "").replace('"', "") + '"'),
    st.sampled_from(["true", "false", "nan", "inf", "-inf", "[]", "{}", "1979-05-27"]),
)
_sections = st.sampled_from(
    ["", "[host]", "[service]", "[model]", "[gpu]", "[keys]", "[benchmark.presets.quick]"]
)
_keys = st.sampled_from(
    ["name", "kind", "hostname", "port", "base_url", "api_key_env", "unit", "refresh_s", "tp",
     "temperature", "concurrency", "help", "quit", "jump", "x"]
)  # fmt: skip


@FUZZ
@given(st.text(max_size=400))
def test_any_text_gives_a_profile_or_one_line_problems(tmp_path_factory, text: str) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "p.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    profile, problems = profile_problems(path)
    assert (profile is None) == bool(problems)
    assert all("\n" not in problem for problem in problems)


@FUZZ
@given(st.lists(st.tuples(_sections, _keys, _toml_scalar), max_size=12))
def test_toml_shaped_documents_never_raise(tmp_path_factory, entries) -> None:
    lines = []
    for section, key, value in entries:
        if section:
            lines.append(section)
        lines.append(f"{key} = {value}")
    path = tmp_path_factory.mktemp("fuzz") / "p.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    profile, problems = profile_problems(path)
    assert (profile is None) == bool(problems)
    assert all("\n" not in problem for problem in problems)


def test_profiles_list_and_status_survive_hostile_profiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    folder = tmp_path / "profiles"
    folder.mkdir()
    os.mkfifo(folder / "fifo.toml")
    (folder / "deep.toml").write_text("x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n")
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    assert main(["profiles", "list"]) == 0
    out = capsys.readouterr().out
    assert time.monotonic() - started < 10
    assert out.count("INVALID") == 2 and "Traceback" not in out
    for name in ("fifo", "deep"):
        assert main(["status", "-p", name]) != 0
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("servedeck: error:"), err
