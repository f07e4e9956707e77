"""`--lora NAME[:W],...`: the request order across adapters, and its refusals."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.bench.adapters import AdapterSpecError, adapter_cycle, adapter_for, check_served


@settings(max_examples=100, deadline=None)
@given(weights=st.lists(st.integers(1, 9), min_size=1, max_size=5))
def test_every_period_sends_each_adapter_its_weight_and_never_bunches_the_heaviest(
    weights: list[int],
) -> None:
    text = ",".join(f"a{i}:{w}" for i, w in enumerate(weights))
    cycle = adapter_cycle(text)
    counts = Counter(cycle)
    unit = min(weights)
    ratio = {f"a{i}": w for i, w in enumerate(weights)}
    assert all(
        counts[name] * unit == ratio[name] * counts[min(ratio, key=ratio.get)] for name in ratio
    )
    # Smooth: any window of the period holds each adapter within one of its share.
    for start in range(len(cycle)):
        window = [adapter_for(text, start + k) for k in range(len(cycle) // 2)]
        for name, weight in ratio.items():
            share = weight / sum(weights) * len(window)
            assert abs(window.count(name) - share) <= 1.5 * max(1, len(weights) - 1)


def test_equal_weights_are_round_robin() -> None:
    assert [adapter_for("sql,chat", i) for i in range(4)] == ["sql", "chat", "sql", "chat"]


def test_an_adapter_not_listed_is_refused_naming_it_and_the_listed_ones() -> None:
    models = [
        {"id": "base"},
        {"id": "sql", "parent": "base"},
        {"id": "chat", "parent": "base"},
    ]
    check_served("sql,chat", models, "http://h:8000")
    with pytest.raises(AdapterSpecError, match=r"--lora nope: not served by http://h:8000 "
                       r"\(/v1/models lists adapters: chat, sql\)"):  # fmt: skip
        check_served("sql,nope", models, "http://h:8000")
