"""tune.toml: the grid and the list become configurations; every bad field is one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.tune.space import MANAGED_FLAGS, TuneSpaceError, load_space, parse_space

PATH = Path("/etc/servedeck/tune.toml")

SPACE = """
[tune]
objective = "tok_per_gpu"
budget_s = 3600
deadline_s = 600

[grid]
"--max-num-seqs" = [16, 64]
"--enable-expert-parallel" = [false, true]
env = { VLLM_ATTENTION_BACKEND = ["FLASHINFER"] }

[[config]]
name = "tp4"
"--tensor-parallel-size" = 4
"--gpu-memory-utilization" = 0.85
"""


def test_grid_and_list_make_every_configuration() -> None:
    space = parse_space(SPACE, PATH)
    assert space.objective == "tok_per_gpu" and space.budget_s == 3600 and space.deadline_s == 600
    assert len(space.configs) == 5
    first = space.configs[0]
    assert first.flags == (("--enable-expert-parallel", False), ("--max-num-seqs", 16))
    assert first.env == (("VLLM_ATTENTION_BACKEND", "FLASHINFER"),)
    assert first.name == "no-ep max-num-seqs=16 VLLM_ATTENTION_BACKEND=FLASHINFER"
    assert space.configs[-1].name == "tp4" and space.configs[-1].flag("--tensor-parallel-size") == 4
    assert len({config.key for config in space.configs}) == 5


def test_the_same_configuration_twice_is_tried_once() -> None:
    text = '[grid]\n"--max-num-seqs" = [8]\n[[config]]\n"--max-num-seqs" = 8\nname = "again"\n'
    assert [c.name for c in parse_space(text, PATH).configs] == ["max-num-seqs=8"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[grid]\n"--max-num-seqs" = [0]', "[grid] '--max-num-seqs': expected a whole number"),
        ('[grid]\n"--max-num-seqs" = 8', "[grid] '--max-num-seqs': expected a non-empty list"),
        (
            '[[config]]\n"--gpu-memory-utilization" = 1.5',
            "[[config]] #1 '--gpu-memory-utilization'",
        ),
        ('[[config]]\n"--kv-cache-dtype" = "fp4"', "'--kv-cache-dtype': expected one of auto"),
        ('[[config]]\n"--enable-expert-parallel" = "yes"', "expected true or false"),
        ('[[config]]\n"-tp" = 8', "'-tp': not a long flag"),
        ('[[config]]\n"--port" = 9000', "'--port': the profile's --port stays"),
        ('[[config]]\nenv = { "1BAD" = "x" }', "[[config]] #1 env '1BAD': not an environment"),
        ('[tune]\nobjective = "speed"\n[[config]]\nname = "a"', "[tune] 'objective': expected one"),
        (
            '[tune]\nbudget_s = -1\n[[config]]\nname = "a"',
            "[tune] 'budget_s': expected a number > 0",
        ),
        (
            '[tune]\nbudget_s = 60\ndeadline_s = 90\n[[config]]\nname="a"',
            "'deadline_s': 90 s is over",
        ),
        ('[tune]\nbudgt_s = 60\n[[config]]\nname = "a"', "[tune] 'budgt_s': unknown field"),
        ("[tune]\nobjective = 'capacity'", "no configuration"),
        ("[grids]\nx = 1", "unknown table 'grids'"),
        ("[grid\n", "TOML syntax error"),
    ],
)
def test_bad_input_is_one_line_naming_file_and_field(text: str, words: str) -> None:
    with pytest.raises(TuneSpaceError) as caught:
        parse_space(text, PATH)
    message = str(caught.value)
    assert message.startswith(str(PATH)) and "\n" not in message and words in message, message


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TuneSpaceError, match=r"tune.toml: cannot read: No such file"):
        load_space(tmp_path / "tune.toml")


_values = st.one_of(
    st.integers(-5, 5000), st.floats(allow_nan=True), st.booleans(), st.text(max_size=8)
)
_flags = st.sampled_from(
    ["--tensor-parallel-size", "--max-num-seqs", "--gpu-memory-utilization", "--kv-cache-dtype",
     "--enable-prefix-caching", "--other-flag", *MANAGED_FLAGS]
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_flags, st.lists(_values, max_size=3), min_size=1, max_size=4))
def test_any_grid_parses_or_is_refused_in_one_line(grid: dict[str, list[object]]) -> None:
    lines = ["[grid]"]
    for flag, values in grid.items():
        rendered = ", ".join(
            str(v).lower() if isinstance(v, bool)
            else repr(v).replace("'", '"') if isinstance(v, str)
            else ("nan" if v != v else repr(v)) for v in values
        )  # fmt: skip
        lines.append(f'"{flag}" = [{rendered}]')
    try:
        space = parse_space("\n".join(lines), PATH)
    except TuneSpaceError as error:
        assert str(error).startswith(str(PATH)) and "\n" not in str(error)
        return
    for config in space.configs:
        tp = config.flag("--tensor-parallel-size")
        assert tp is None or (isinstance(tp, int) and tp >= 1)
        gmu = config.flag("--gpu-memory-utilization")
        assert gmu is None or (isinstance(gmu, float) and 0 < gmu <= 1)


def test_the_example_space_parses() -> None:
    """examples/tune-demo.toml, the one README names, is a space the demo can run."""
    root = Path(__file__).resolve().parents[2]
    space = load_space(root / "examples" / "tune-demo.toml")
    assert space.objective == "capacity" and len(space.configs) == 4
    assert {c.name for c in space.configs} >= {"ep", "tp6"}
