"""Per-request lengths: seeded distributions with the asked moments, exact mix shares, and
one-line errors naming the flag."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.bench.lengths import LengthDist, Lengths, class_counts, parse_mix
from tui.bench.workload import BenchSpec
from tui.cli import main

N = 20_000


def _inputs(dist: LengthDist, mean: int = 512, seed: int = 3) -> list[int]:
    return [size for size, _, _ in Lengths(mean, 16, input_dist=dist).draw(N, seed)]


def test_normal_lengths_have_the_asked_mean_and_stddev_and_repeat_by_seed() -> None:
    drawn = _inputs(LengthDist("normal", stddev=64))
    assert statistics.fmean(drawn) == pytest.approx(512, abs=3 * 64 / math.sqrt(N) + 0.5)
    assert statistics.pstdev(drawn) == pytest.approx(64, rel=0.03)
    assert drawn == _inputs(LengthDist("normal", stddev=64))
    assert drawn != _inputs(LengthDist("normal", stddev=64), seed=4)


def test_lognormal_lengths_keep_the_mean_and_stddev_and_lean_right() -> None:
    drawn = _inputs(LengthDist("lognormal", stddev=256))
    assert statistics.fmean(drawn) == pytest.approx(512, rel=0.02)
    assert statistics.pstdev(drawn) == pytest.approx(256, rel=0.06)
    assert statistics.median(drawn) < statistics.fmean(drawn)
    assert min(drawn) >= 1


def test_uniform_lengths_fill_their_range() -> None:
    drawn = _inputs(LengthDist("uniform", low=100, high=300))
    assert min(drawn) == 100 and max(drawn) == 300
    assert statistics.fmean(drawn) == pytest.approx(200, abs=2)
    assert statistics.pstdev(drawn) == pytest.approx(200 / math.sqrt(12), rel=0.03)


@settings(max_examples=60, deadline=None)
@given(
    shares=st.lists(st.floats(0.01, 10), min_size=1, max_size=5),
    count=st.integers(0, 500),
)
def test_mix_counts_are_the_shares_of_the_requests_to_within_one(
    shares: list[float], count: int
) -> None:
    classes = parse_mix(",".join(f"c{i}:{share!r}:64/16" for i, share in enumerate(shares)))
    counts = class_counts(classes, count)
    assert sum(counts) == count
    for share, got in zip(shares, counts, strict=True):
        assert abs(got - count * share / sum(shares)) < 1


def test_a_mix_sends_each_class_its_lengths_in_its_share() -> None:
    lengths = Lengths(128, 128, mix=parse_mix("chat:0.8:512/256,rag:0.2:8192/256"))
    drawn = lengths.draw(1000, seed=1)
    assert sum(name == "chat" for _, _, name in drawn) == 800
    assert {(size, out) for size, out, name in drawn if name == "rag"} == {(8192, 256)}
    assert [name for _, _, name in drawn[:50]].count("rag") not in (0, 50)  # shuffled
    assert lengths.describe() == "mix chat 80% 512/256, rag 20% 8192/256"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--input-dist", "normal"], "--input-dist normal needs --input-stddev S"),
        (["--output-dist", "uniform", "--output-range", "9:3"], "--output-range needs 1 <="),
        (["--input-dist", "uniform", "--input-range", "a:b"], "--input-range expects LOW:HIGH"),
        (["--mix", "chat:0.8:512"], "--mix: 'chat:0.8:512' is not NAME:SHARE:IN/OUT"),
        (["--mix", "a:1:8/8,a:1:8/8"], "--mix: class 'a' is named twice"),
        (["--mix", "a:-1:8/8"], "--mix: 'a:-1:8/8' needs a name and a positive share"),
        (["--input-stddev", "3"], "--input-stddev and --input-range need --input-dist"),
        (["--mix", "a:1:8/8", "--workload", "shared-prefix"], "need --workload random"),
    ],
)
def test_bad_length_specs_are_one_line_errors_naming_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["bench", "--url", "http://127.0.0.1:9", *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_fixed_spec_draws_nothing_and_one_spread_side_draws() -> None:
    assert BenchSpec(base_url="").drawn_lengths(10, 1) is None
    spec = BenchSpec(base_url="", output_dist="uniform", output_range="2:40")
    drawn = spec.drawn_lengths(50, 1)
    assert drawn is not None and len({out for _, out, _ in drawn}) > 10
