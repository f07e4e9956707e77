"""The tune's result table fits a terminal: 80 columns by default, every column with --wide."""

from __future__ import annotations

import pytest

from tui.tune.driver import Outcome
from tui.tune.results import result_lines, table_rows

GIB = 1024**3

# What the simulator's demo space gives: served, an OOM, a killed load, the Plan's skips.
OUTCOMES = [
    Outcome("max-num-seqs=48 ep", "a", "served", 8, "TP=8+EP", kv_room_bytes_per_gpu=31 * GIB,
            predicted_load_s=40, load_s=41, single_stream_tok_s=61.3, capacity_users=24,
            total_tok_s=1012.0, per_user_tok_s=42.2, capacity_users_above=26),
    Outcome("max-num-seqs=4", "b", "served", 8, "TP=8", kv_room_bytes_per_gpu=31 * GIB,
            load_s=39, single_stream_tok_s=63.0, capacity_users=4, total_tok_s=240.0,
            per_user_tok_s=60.0, capacity_users_above=5),
    Outcome("oom max-num-seqs=16 SERVEDECK_SIM_OOM_AT_LOAD=1", "c", "failed", 8, "TP=8",
            phase="kv_cache", failure_line="torch.OutOfMemoryError: CUDA out of memory. "
            "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB"),
    Outcome("tp6", "d", "skipped", 6, "TP=6",
            reason="TP=6: 64 attention heads / 6 = 10.67, not a whole number"),
    Outcome("tp4", "e", "skipped", 4, "TP=4",
            reason="TP=4: weights 148.2 GiB/GPU + KV 4.1 GiB > 139.8 GiB usable"),
]  # fmt: skip


def _table(lines: list[str]) -> list[str]:
    return lines[: len(OUTCOMES) + 1]


def test_the_wide_table_has_every_column_and_is_wider_than_a_terminal() -> None:
    lines = result_lines(OUTCOMES, "capacity")
    assert max(len(line) for line in _table(lines)) > 120
    assert lines[0].split("  ")[0] == "#" and "KV room/GPU" in lines[0]
    assert table_rows(OUTCOMES, "capacity")[0][-1] == "KV room/GPU"  # the handoff's, whole


@pytest.mark.parametrize("objective", ["capacity", "single_stream", "tok_per_gpu"])
@pytest.mark.parametrize("width", [80, 120])
def test_the_table_fits_the_width_and_keeps_objective_verdict_and_flags(
    width: int, objective: str
) -> None:
    lines = result_lines(OUTCOMES, objective, width)
    assert max(len(line) for line in lines) <= width, "\n".join(lines)
    head = _table(lines)[0]
    objective_header = {"capacity": "users", "single_stream": "1-str", "tok_per_gpu": "/GPU"}
    assert objective_header[objective] in head.split() and "outcome" in head
    body = "\n".join(_table(lines))
    # the configurations' key flags stay whole; each verdict is in its row
    for name in ("max-num-seqs=48 ep", "max-num-seqs=4", "tp6", "tp4"):
        assert name in body
    assert "failed at kv_cache" in body and body.count("skipped") == 2
    # what the short cells left out is under the table, in full words
    text = " ".join(line.strip() for line in lines)
    assert "tp6: skipped: TP=6: 64 attention heads / 6 = 10.67, not a whole number" in text
    assert "best: max-num-seqs=" in text


def test_columns_go_least_telling_first() -> None:
    at_120 = _table(result_lines(OUTCOMES, "capacity", 120))[0].split()
    at_80 = _table(result_lines(OUTCOMES, "capacity", 80))[0].split()
    assert set(at_80) < set(at_120)
    assert "KV/GPU" not in at_80 and "users" in at_80


def test_a_name_too_long_for_the_width_is_cut_and_marked() -> None:
    long = Outcome("x" * 90, "z", "served", 1, "TP=1", capacity_users=3)
    lines = result_lines([long], "capacity", 80)
    assert max(len(line) for line in _table(lines)) <= 80 and "x~" in lines[1]
