"""Each start of a tune is a Deployment attempt that says which configuration it was.

The handoff's "Deployment attempts" diffs each start's command line against the one
before: a flag the tune varies but the attempt does not read would make two different
configurations read "same as before". Generated: any pair of values of any flag the
tune types, written by the tune's own `config_argv`, read by the recorder's `config_of`.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.plan.layout import KV_DTYPES
from tui.record.attempts import config_of, diff_config
from tui.tune.dropin import config_argv
from tui.tune.space import BOOL_FLAGS, INT_FLAGS, FlagValue, TuneConfig

BASE = ["vllm", "serve", "/models/m", "--tensor-parallel-size", "8", "--port", "8000"]


def _values(flag: str) -> st.SearchStrategy[FlagValue]:
    if flag in BOOL_FLAGS:
        return st.booleans()
    if flag in INT_FLAGS:
        return st.integers(1, 1 << 20)
    if flag == "--kv-cache-dtype":
        return st.sampled_from(sorted(KV_DTYPES))
    return st.floats(0.05, 1.0).map(lambda x: round(x, 3))  # --gpu-memory-utilization


FLAGS = sorted(INT_FLAGS | BOOL_FLAGS | {"--kv-cache-dtype", "--gpu-memory-utilization"})


@st.composite
def _two_values(draw: st.DrawFn) -> tuple[str, FlagValue, FlagValue]:
    flag = draw(st.sampled_from(FLAGS))
    first = draw(_values(flag))
    second = draw(_values(flag).filter(lambda v: str(v) != str(first)))
    return flag, first, second


@settings(max_examples=200, deadline=None)
@given(_two_values())
def test_a_tuned_flag_changed_between_starts_is_named(
    pair: tuple[str, FlagValue, FlagValue],
) -> None:
    flag, first, second = pair
    before = config_of(config_argv(BASE, TuneConfig("a", flags=((flag, first),))))
    after = config_of(config_argv(BASE, TuneConfig("b", flags=((flag, second),))))
    text = diff_config(before, after)
    assert text != "same as before", (flag, first, second)
    assert " -> " in text


def test_a_flag_turned_off_reads_off() -> None:
    argv = config_argv(BASE, TuneConfig("p", flags=(("--enable-prefix-caching", False),)))
    assert config_of(argv)["prefix_caching"] == "off"
    assert config_of([*BASE, "--enable-prefix-caching"])["prefix_caching"] == "on"
    assert config_of([*BASE, "--max-num-seqs=48"])["max_num_seqs"] == "48"
