"""Speculative decoding's acceptance from vLLM's spec-decode counters (names from
vllm/v1/spec_decode/metrics.py, vLLM 0.32)."""

from __future__ import annotations

import pytest

from tui.serving.metrics import compute_metrics, parse_metrics
from tui.serving.spec_decode import spec_decode_line


def page(drafts: int, draft_tokens: int, accepted: int, per_pos: tuple[int, ...]) -> str:
    """A /metrics page as vLLM's SpecDecodingProm writes it for engine 0."""
    labels = 'engine="0",model_name="m"'
    lines = []
    for name, value in (
        ("num_drafts", drafts),
        ("num_draft_tokens", draft_tokens),
        ("num_accepted_tokens", accepted),
    ):
        lines += [
            f"# TYPE vllm:spec_decode_{name}_total counter",
            f"vllm:spec_decode_{name}_total{{{labels}}} {value}",
        ]
    lines.append("# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter")
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{p}"}} {v}'
        for p, v in enumerate(per_pos)
    ]
    return "\n".join(lines) + "\n"


def test_acceptance_over_the_interval() -> None:
    before = parse_metrics(page(100, 300, 150, (70, 50, 30)), at_s=0.0)
    after = parse_metrics(page(300, 900, 510, (250, 170, 90)), at_s=10.0)
    spec = compute_metrics(after, before).spec_decode
    assert spec is not None and spec.over_interval
    assert (spec.drafts, spec.draft_tokens, spec.accepted_tokens) == (200, 600, 360)
    assert spec.acceptance_rate == pytest.approx(0.6)
    assert spec.mean_accepted_length == pytest.approx(1 + 360 / 200)
    assert spec.per_position == pytest.approx((0.9, 0.6, 0.3))
    assert spec_decode_line(spec) == "spec accept 60% len 2.80 (pos 90/60/30%)"


def test_first_scrape_is_the_servers_life_and_no_drafts_is_na() -> None:
    spec = compute_metrics(parse_metrics(page(10, 30, 15, (8, 5, 2)), at_s=0.0)).spec_decode
    assert spec is not None and not spec.over_interval and spec.acceptance_rate == 0.5
    idle = compute_metrics(
        parse_metrics(page(10, 30, 15, (8, 5, 2)), at_s=1.0),
        parse_metrics(page(10, 30, 15, (8, 5, 2)), at_s=0.0),
    ).spec_decode
    assert idle is not None and idle.acceptance_rate is None and idle.per_position == ()
    assert spec_decode_line(idle) == "spec accept n/a (no drafts)"


def test_no_spec_decode_counters_is_none_not_zero() -> None:
    metrics = compute_metrics(
        parse_metrics(
            '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine="0"} 1\n'
        )
    )
    assert metrics.spec_decode is None and spec_decode_line(None) is None


def test_a_restarted_server_counts_from_its_new_life() -> None:
    before = parse_metrics(page(500, 1500, 900, (400, 300, 200)), at_s=0.0)
    after = parse_metrics(page(10, 30, 21, (9, 7, 5)), at_s=10.0)
    spec = compute_metrics(after, before).spec_decode
    assert spec is not None and spec.drafts == 10 and spec.acceptance_rate == pytest.approx(0.7)


def test_the_handoff_states_acceptance_and_each_engine() -> None:
    from tests.core.test_engines import STARVED, two_engine_page
    from tui.core.config import demo_profile
    from tui.summary.inputs import SummaryInputs
    from tui.summary.sections import now

    text = two_engine_page("metrics.txt", STARVED) + page(10, 30, 15, (8, 5, 2))
    metrics = compute_metrics(parse_metrics(text, at_s=1.0))
    lines = "\n".join(now(SummaryInputs(demo_profile(), "box", 1.0, metrics=metrics)))
    assert "speculative decoding | accept 50% len 2.50 (pos 80/50/20%)" in lines
    assert "engine 1: running / waiting, KV | 0 / 0, 0.0 %" in lines
    assert "engine imbalance | engine 1 idle while engine 0 has 12 waiting" in lines
