"""Every regex servedeck applies is linear-time: adversarial lines (1 MB through the log
pipeline, 256 KB against every pattern), a time bound (issue 16: one 1 MB `Avg prompt
throughput` line stalled `status` for minutes and froze the console). A quadratic
pattern takes minutes on these inputs; a linear one takes milliseconds, so the bounds
are generous for a loaded machine.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tui
import widgets
from tui.core.redact import redact_data, redact_text
from tui.logs.classify import LevelClassifier
from tui.serving.load.tracker import LoadTracker

MB = 1024 * 1024
BOUND_S = 3.0  # per search of 1 MB; linear patterns take ~0.01-0.05 s
# Every pattern against every adversarial unit: 256 KB lines, where a quadratic pattern
# still takes minutes (~3e10 steps) and the census costs a quarter of 1 MB's CPU.
CENSUS_LINE_CHARS = 256 * 1024


def _all_patterns() -> dict[str, re.Pattern[str]]:
    """Every compiled pattern at module level in tui and widgets (also inside tables and
    table entries)."""
    found: dict[str, re.Pattern[str]] = {}
    for package in (tui, widgets):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                regex = getattr(value, "regex", value)  # a table's entry (load patterns' Needs)
                if isinstance(regex, re.Pattern) and isinstance(regex.pattern, str):
                    found[f"{info.name}.{name}"] = regex
                elif isinstance(value, tuple):
                    for index, item in enumerate(value):
                        if isinstance(item, tuple) and item and isinstance(item[0], re.Pattern):
                            found[f"{info.name}.{name}[{index}]"] = item[0]
    return found


PATTERNS = _all_patterns()
UNITS = ("1", "1,", "a", "a.", "a_", "a1", "a-", " ", "\u2588 ", "[", "x=", "sk-", "\x1b[", "'a': ")
PREFIXES = ("", "Engine 000: Avg prompt throughput: ")


@functools.cache
def _line(prefix: str, unit: str, size: int = MB) -> str:
    return prefix + unit * (size // len(unit))


def test_the_pattern_census_found_the_log_patterns() -> None:
    assert len(PATTERNS) > 40
    assert "tui.serving.load.patterns.VLLM_ENGINE_STATS" in PATTERNS
    assert "widgets.log_highlight._LEVEL_STYLES[0]" in PATTERNS


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_is_linear_on_long_lines(name: str) -> None:
    pattern = PATTERNS[name]
    for prefix in PREFIXES:
        for unit in UNITS:
            line = _line(prefix, unit, CENSUS_LINE_CHARS)
            started = time.perf_counter()
            pattern.search(line)
            elapsed = time.perf_counter() - started
            assert elapsed < BOUND_S, f"{name} took {elapsed:.1f} s on {prefix!r}+{unit!r}*"


@pytest.mark.parametrize("unit", UNITS)
def test_the_log_pipeline_is_linear_on_1_mb_lines(unit: str) -> None:
    """What a line meets on its way: level, load tracking, redaction (status, logs, console)."""
    line = _line("Engine 000: Avg prompt throughput: ", unit)
    tracker = LoadTracker()
    tracker.apply("INFO 11-29 10:00:00 [api.py:1] vLLM server version 0.33.0, serving model m")
    started = time.perf_counter()
    LevelClassifier().classify(line)
    tracker.apply(line)
    tracker.snapshot()
    redact_text(line)
    redact_data({"line": line, "api_key": line})
    assert time.perf_counter() - started < 4 * BOUND_S


def test_the_issue_example_line_is_fast() -> None:
    line = "Engine 000: Avg prompt throughput: " + "7" * MB
    tracker = LoadTracker()
    started = time.perf_counter()
    tracker.apply(line)
    assert time.perf_counter() - started < BOUND_S


_fragments = st.sampled_from(
    [
        "Engine 000: ", "Avg prompt throughput: ", "1", ",", ".", " tokens/s", "Running: ",
        "reqs, ", "Decode batch.", "#running-req: ", "\u2588", " version ", " model ", "a",
        "Error", "Traceback", "--api-key", "=", ":", "'", '"', "[", "{", "sk-", "Bearer ",
        "://", "@", "(Worker_TP1 pid=2)", "[rank3]:", "\r", "\x1b[", "Loading safetensors ",
        "checkpoint shards: ", "% Completed | ", "/", "<", "00:",
    ]
)  # fmt: skip


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_fragments, min_size=1, max_size=6), st.lists(_fragments, max_size=3))
def test_repeated_pattern_fragments_stay_linear(unit: list[str], prefix: list[str]) -> None:
    """Adversarial lines built from the patterns' own pieces, repeated to 128 KB."""
    piece = "".join(unit)
    line = "".join(prefix) + piece * (128 * 1024 // len(piece))
    started = time.perf_counter()
    for pattern in PATTERNS.values():
        pattern.search(line)
    LoadTracker().apply(line)
    redact_text(line)
    assert time.perf_counter() - started < 20 * BOUND_S
