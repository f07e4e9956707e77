"""The load patterns' table tells the truth: each pattern's declared literals are in every
match, and nothing else keeps a copy of them.

The tracker tries a pattern only where one of its literals is, and its prefilter lets a
line through without `apply` when it holds none of the table's words: a literal that a
match can lack would lose that line. Checked on a sample of each pattern, on generated
text built from the samples' pieces, and on the captured vLLM logs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tui.serving.load as load
from tests.support.load_samples import FACT_SAMPLES
from tests.support.log_samples import STATS, captured_lines
from tui.serving.load import patterns
from tui.serving.load.patterns import Needs

TABLE = {name: value for name, value in vars(patterns).items() if isinstance(value, Needs)}
ROLES = {*patterns.STARTS, *patterns.JOINS, *patterns.FACTS, *patterns.STATS, *patterns.FAILURES}

SAMPLES = [
    *FACT_SAMPLES,
    STATS.format(s=1, i=3),
    "Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 "
    "reqs, Waiting: 0 reqs, GPU KV cache usage: 1.5%",
    "Decode batch. #running-req: 3, token usage: 0.5, gen throughput (token/s): 9.0, #queue-req: 0",
    "Engine core initialization failed",
    "EngineCore failed to start",
    "CUDA out of memory",
    "torch.OutOfMemoryError",
    "RuntimeError: x",
    "ValueError: x",
    "AssertionError",
    "Killed",
]
PIECES = [
    *SAMPLES,
    *(sample[: len(sample) // 2] for sample in SAMPLES),
    *(sample[len(sample) // 2 :] for sample in SAMPLES),
    " ",
    "x",
    "1",
    "\u2588",
    ": ",
]


def test_every_pattern_is_in_the_table_with_literals() -> None:
    assert len(TABLE) >= 28
    assert set(TABLE.values()) == ROLES
    for name, needs in TABLE.items():
        assert needs.literals and all(needs.literals), name


def test_each_pattern_matches_its_samples_only_with_a_literal() -> None:
    for name, needs in TABLE.items():
        matched = [sample for sample in SAMPLES if needs.regex.search(sample)]
        assert matched, name
        for sample in matched:
            assert any(literal in sample for literal in needs.literals), (name, sample)
            assert needs.search(sample) is not None


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=10).map("".join))
def test_a_pattern_matches_generated_text_only_where_a_literal_is(text: str) -> None:
    for name, needs in TABLE.items():
        if needs.regex.search(text):
            assert any(literal in text for literal in needs.literals), (name, text)


def test_the_literals_hold_on_captured_logs() -> None:
    matched = 0
    for text in captured_lines():
        for name, needs in TABLE.items():
            if needs.regex.search(text):
                matched += 1
                assert any(literal in text for literal in needs.literals), (name, text)
    assert matched >= 10


def test_the_machine_searches_only_patterns_of_the_table() -> None:
    source = (Path(load.__file__).parent / "machine.py").read_text()
    searched = set(re.findall(r"\bp\.([A-Z_]+)\.search", source))
    assert len(searched) >= 23
    assert [name for name in searched if name not in TABLE] == ["EXCEPTION_LINE"]  # no gate


def test_no_module_of_the_load_keeps_a_copy_of_a_literal() -> None:
    """The word lists are derived from the table (prefilter.py), never written again."""
    literals = {literal for needs in TABLE.values() for literal in needs.literals}
    copies = []
    for name in ("machine.py", "prefilter.py", "tracker.py", "clock.py"):  # what reads lines
        path = Path(load.__file__).parent / name
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in literals:
                copies.append(f"{path.name}:{node.lineno}: {node.value!r}")
    assert copies == []
