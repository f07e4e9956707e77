"""Reading an ssh config never runs anything from it, and a loop or a flood is one line.

asyncssh's own parser runs `Match exec "CMD"` through a shell as it parses. Generated
configs spell the criterion every way ssh accepts (any case, negated, `exec=CMD`, quoted
or not, beside other criteria, in an Included file) with a command that leaves a marker:
no marker ever appears, the block's options never apply, and the lookup names the line
it did not run. Include loops end as an AliasError naming the files of the loop.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.hosts.ssh_config import MAX_CONFIG_BYTES, AliasError, host_aliases, lookup

ALIAS = "box"

_keywords = st.sampled_from(["Match", "match", "MATCH", "mAtCh"])
_execs = st.sampled_from(["exec", "EXEC", "Exec", "!exec", "!EXEC"])
_before = st.sampled_from(
    [
        "",
        "all ",
        "host box ",
        "originalhost box ",
        "user * ",
        "localuser * ",
        "!host other ",
        "canonical ",
        "final ",
        "host x ",
    ]
)
_after = st.sampled_from(["", " host box", " all", " !user nobody", " final"])
_forms = st.sampled_from(["quoted", "unquoted", "equals", "spaced-equals"])
_places = st.sampled_from(["top", "after-host", "included"])


def _write_script(folder: Path) -> tuple[Path, Path]:
    """An executable that leaves a marker (a path with no spaces: usable unquoted)."""
    marker = folder / "MARKER"
    script = folder / "mark.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 0\n")
    script.chmod(0o755)
    return script, marker


def _criterion(word: str, form: str, script: Path) -> str:
    if form == "quoted":
        return f'{word} "{script} --quoted arg"'
    if form == "unquoted":
        return f"{word} {script}"
    if form == "equals":
        return f"{word}={script}"
    return f'{word} = "{script}"'


def _config(folder: Path, keyword: str, match_line: str, place: str) -> Path:
    block = f"{keyword} {match_line}\n  User fromexec\n  Port 2200\n"
    host = f"Host {ALIAS}\n  HostName 127.0.0.1\n"
    config = folder / "config"
    if place == "included":
        extra = folder / "extra.conf"
        extra.write_text(block)
        config.write_text(f"Include {extra}\n{host}")
    elif place == "after-host":
        config.write_text(host + block)
    else:
        config.write_text(block + host)
    return config


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_keywords, _execs, _before, _after, _forms, _places)
def test_match_exec_never_runs_in_any_spelling(
    keyword: str, word: str, before: str, after: str, form: str, place: str
) -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        script, marker = _write_script(folder)
        match_line = f"{before}{_criterion(word, form, script)}{after}"
        config = _config(folder, keyword, match_line, place)
        try:
            entry = lookup(ALIAS, [config])
        except AliasError as error:  # a shape asyncssh refuses: one line, still nothing run
            assert not marker.exists(), f"ran: {keyword} {match_line}"
            assert "\n" not in str(error)
        else:
            assert not marker.exists(), f"ran: {keyword} {match_line}"
            assert entry.user != "fromexec" and entry.port != 2200, match_line
            assert entry.hostname == "127.0.0.1"
            where = folder / ("extra.conf" if place == "included" else "config")
            line = 3 if place == "after-host" else 1
            assert entry.ignored_exec == (f"{where} line {line}",), entry.ignored_exec


def test_a_match_exec_block_is_named_once_by_the_resolved_route(tmp_path: Path) -> None:
    from tui.core.config import HostConfig
    from tui.hosts.ssh_config import resolve_alias, route_report

    script, marker = _write_script(tmp_path)
    config = tmp_path / "config"
    config.write_text(
        f"Match exec {script}\n  User fromexec\n"
        f"Host {ALIAS}\n  HostName 127.0.0.1\n  ProxyJump hop\n"
        "Host hop\n  HostName 127.0.0.2\n"
    )
    host = resolve_alias(HostConfig(kind="ssh", ssh_alias=ALIAS), [config])
    assert host.alias_error is None and host.user is None
    lines = [line for line in route_report(host) if "Match exec" in line]
    assert len(lines) == 1, route_report(host)  # the alias and its jump hop: said once
    assert f"{config} line 1" in lines[0] and "not run" in lines[0]
    assert not marker.exists()


@pytest.mark.parametrize(
    ("layout", "loop"),
    [
        ({"config": "Include {d}/config\n"}, ["config", "config"]),
        (
            {"config": "Include {d}/a\n", "a": "Include {d}/b\n", "b": "Include {d}/a\n"},
            ["a", "b", "a"],
        ),
        (
            {
                "config": "Include {d}/a\n",
                "a": "Include {d}/b\n",
                "b": "Include {d}/c\n",
                "c": "Include {d}/b\n",
            },
            ["b", "c", "b"],
        ),
        (
            {"config": "Include {d}/conf.d/*\n", "conf.d/x": "Include {d}/conf.d/*\n"},
            ["conf.d/x", "conf.d/x"],
        ),
    ],
    ids=["self", "a-b-a", "b-c-b", "glob"],
)
def test_an_include_loop_is_one_line_naming_its_files(
    tmp_path: Path, layout: dict[str, str], loop: list[str]
) -> None:
    (tmp_path / "conf.d").mkdir()
    for name, text in layout.items():
        (tmp_path / name).write_text(text.format(d=tmp_path) + f"Host {ALIAS}\n  Port 2222\n")
    config = tmp_path / "config"
    for read in (lambda: lookup(ALIAS, [config]), lambda: host_aliases(config)):
        with pytest.raises(AliasError) as caught:
            read()
        chain = " -> ".join(str(tmp_path / name) for name in loop)
        assert str(caught.value) == f"Include loop: {chain}"


def test_a_diamond_of_includes_is_no_loop(tmp_path: Path) -> None:
    (tmp_path / "shared").write_text(f"Host {ALIAS}\n  Port 2222\n")
    (tmp_path / "a").write_text(f"Include {tmp_path}/shared\n")
    (tmp_path / "config").write_text(f"Include {tmp_path}/a\nInclude {tmp_path}/shared\n")
    assert lookup(ALIAS, [tmp_path / "config"]).port == 2222
    assert host_aliases(tmp_path / "config") == [ALIAS]


def test_an_oversize_config_is_refused_before_it_is_read(tmp_path: Path) -> None:
    config = tmp_path / "config"
    with config.open("wb") as handle:  # sparse: nothing is written to disk
        handle.truncate(MAX_CONFIG_BYTES + 1)
    included = tmp_path / "small"
    included.write_text(f"Include {config}\nHost {ALIAS}\n")
    for read in (
        lambda: lookup(ALIAS, [config]),
        lambda: host_aliases(config),
        lambda: lookup(ALIAS, [included]),
        lambda: host_aliases(included),
    ):
        with pytest.raises(AliasError, match="over the 1 MiB") as caught:
            read()
        assert str(config) in str(caught.value) and "\n" not in str(caught.value)


def test_nesting_past_openssh_depth_is_refused(tmp_path: Path) -> None:
    for index in range(20):
        (tmp_path / f"c{index}").write_text(f"Include {tmp_path}/c{index + 1}\n")
    (tmp_path / "c20").write_text(f"Host {ALIAS}\n")
    with pytest.raises(AliasError, match="Include nests deeper than 16"):
        lookup(ALIAS, [tmp_path / "c0"])


def test_an_empty_match_criterion_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(f'Match ""\n  User x\nHost {ALIAS}\n')
    with pytest.raises(AliasError, match="line 1"):
        lookup(ALIAS, [config])
