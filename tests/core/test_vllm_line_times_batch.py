"""A batch's own clocks (vllm_line_times_s) equal vllm_line_time_s line by line (issue 18):
the batch version searches each line from just before its first `-` within the first 80
characters, so stamps after a dash, at the 80-character edge, after a word character (no
word boundary), with other digits and with a leap second are all checked here."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.log_samples import captured_lines
from tui.serving.load.tracker import vllm_line_time_s, vllm_line_times_s

EDGE_LINES = [
    "(APIServer pid=1) INFO 11-29 10:00:00 [loggers.py:1] Engine 000",
    "(Worker-1 pid=2) WARNING 11-29 10:00:01 [utils.py:1] a dash before the stamp",
    "no stamp at all",
    "",
    "-",
    "x11-29 10:00:01 no word boundary, then 12-01 09:08:07 a stamp",
    "11-29 10:00:60 a leap second",
    "11-29 10:00:99 a bad second",
    "13-45 25:61:61 a bad date",
    "\u0661\u0661-29 10:00:00 Arabic-Indic digits",
    "a" * 65 + "11-29 10:00:00 ",  # the stamp's space is character 80
    "a" * 66 + "11-29 10:00:00 ",  # one further: past the first 80
    "a-b-c-" * 20 + "11-29 10:00:00 late",
    "11-29 10:00:00\nnewline as the space",
]


def _one_by_one(texts: list[str]) -> list[float | None]:
    return [vllm_line_time_s(text) for text in texts]


def test_edge_lines() -> None:
    assert vllm_line_times_s(EDGE_LINES) == _one_by_one(EDGE_LINES)
    assert vllm_line_times_s(EDGE_LINES)[0] is not None
    assert vllm_line_times_s([]) == []


def test_captured_logs() -> None:
    texts = [line for line in captured_lines()]
    assert texts
    for start in range(0, len(texts), 500):
        chunk = texts[start : start + 500]
        assert vllm_line_times_s(chunk) == _one_by_one(chunk)


_PIECES = st.sampled_from(
    ["11-29 10:00:00 ", "1-2", "-", "1", " ", ":", "a", "_", "(", "\u0661", "\t", "x" * 30, "\n"]
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_PIECES, max_size=12).map("".join), max_size=6))
def test_generated_lines(texts: list[str]) -> None:
    assert vllm_line_times_s(texts) == _one_by_one(texts)
