"""Prefix-cache misses explained: one test per reason, "unknown" when none can be known.

The figures are read from the real vLLM 0.32 page (tests/support/fixtures) and, for
the simulator, through real HTTP: caching off reads as off, never as a 0 % hit rate.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tui.commands.status import _text, status_report
from tui.compose import open_deck
from tui.core.config import demo_profile
from tui.serving.metrics import MetricsPoller, compute_metrics, parse_metrics
from tui.serving.prefix_cache import (
    PrefixCacheInputs,
    args_from_log,
    explain,
    explain_metrics,
    prefix_cache_figures,
)
from tui.sim.box import SimBox, SimServerOptions
from tui.summary.inputs import SummaryInputs
from tui.summary.sections import now

FIXTURES = Path(__file__).parents[1] / "support" / "fixtures" / "vllm-0.32-cpu"


def _inputs(**changes: object) -> PrefixCacheInputs:
    base: dict[str, object] = dict(
        hit_rate=0.0, queries_tokens=4000, enabled=True, block_size_tokens=16
    )
    return PrefixCacheInputs(**{**base, **changes})  # type: ignore[arg-type]


def test_off_in_the_engine_args() -> None:
    verdict = explain(_inputs(enabled=False, hit_rate=None, queries_tokens=0))
    assert verdict is not None and verdict.reason == "off"
    assert "enable_prefix_caching=False" in verdict.text


def test_shared_prefix_shorter_than_one_block() -> None:
    verdict = explain(
        _inputs(block_size_tokens=128, shared_prefix_tokens=100, intended_hit_rate=0.4)
    )
    assert verdict is not None and verdict.reason == "short-prefix"
    assert "(100 tokens) is shorter than one KV block (128 tokens)" in verdict.text
    assert "the workload intends 40%" in verdict.text


def test_prompts_differing_in_their_first_tokens() -> None:
    verdict = explain(
        _inputs(shared_prefix_tokens=512, common_prefix_tokens=3, intended_hit_rate=0.6)
    )
    assert verdict is not None and verdict.reason == "prefix-differs"
    assert "differ from token 3" in verdict.text


def test_evicted_under_pressure() -> None:
    full = explain(_inputs(hit_rate=0.05, intended_hit_rate=0.6, kv_usage_pct=97.0))
    assert full is not None and full.reason == "evicted" and "KV cache 97% full" in full.text
    preempting = explain(_inputs(preemptions_in_window=4, kv_usage_pct=40.0))
    assert preempting is not None and preempting.reason == "evicted"
    assert "4 preemptions" in preempting.text


def test_unknown_when_nothing_can_be_known() -> None:
    verdict = explain(_inputs(block_size_tokens=None, enabled=None))
    assert verdict is not None and verdict.reason == "unknown"
    assert verdict.text == "prefix cache hits 0%: the reason cannot be known"


def test_nothing_to_explain() -> None:
    assert explain(_inputs(hit_rate=0.55, intended_hit_rate=0.6)) is None  # near the intent
    assert explain(_inputs(hit_rate=0.2)) is None  # hits, no intent to compare with
    assert explain(_inputs(hit_rate=None, queries_tokens=0)) is None  # nothing queried
    assert explain(_inputs(intended_hit_rate=0.0)) is None  # the workload shares nothing


def test_the_real_engine_page_says_enabled_and_its_block_size() -> None:
    before = parse_metrics((FIXTURES / "metrics_before.txt").read_text(), at_s=0.0)
    after = parse_metrics((FIXTURES / "metrics.txt").read_text(), at_s=10.0)
    figures = prefix_cache_figures(after, before)
    assert figures is not None
    assert (figures.enabled, figures.block_size_tokens) == (True, 128)
    assert figures.hits_tokens == 0 and figures.queries_tokens and figures.queries_tokens > 0
    verdict = explain_metrics(compute_metrics(after, before))
    assert verdict is not None and verdict.reason == "unknown"  # 0 hits, no cause on the page


def test_the_log_args_line() -> None:
    eager = (FIXTURES / "server_eager.log").read_text().splitlines()
    assert args_from_log(eager) == (None, None)  # not changed: the page says it
    line = (
        "(APIServer pid=1) INFO 11-29 16:33:24 [api_utils.py:286] non-default args: "
        "{'model': '/m', 'enable_prefix_caching': False, 'block_size': 32}"
    )
    assert args_from_log([*eager, line]) == (False, 32)
    assert args_from_log(["non-default args: {'a': __import__('os')}"]) == (None, None)


def test_simulator_without_prefix_caching_reads_off(tmp_path: Path) -> None:
    box = SimBox(tmp_path, seed=2, load_seconds=1.0, options=SimServerOptions(shards=2))
    try:
        box.start()
        assert box.wait_until_ready(timeout_s=90)
        metrics = asyncio.run(MetricsPoller(box.base_url).poll())
    finally:
        box.close()
    assert metrics.prefix_cache is not None and metrics.prefix_cache.enabled is False
    verdict = explain_metrics(metrics)
    assert verdict is not None and verdict.reason == "off"


def test_status_json_and_the_handoff_say_why() -> None:
    """`status --json` and the handoff's Now section carry the reason (the demo: caching off)."""
    deck = open_deck(demo_profile(), demo_load_s=1.0, demo_autostart=True, demo_wait_ready=True)
    try:
        report = asyncio.run(status_report(deck))
        metrics = asyncio.run(MetricsPoller(deck.base_url).poll())
    finally:
        deck.box.close()  # type: ignore[attr-defined]  # the demo's Deck is a SimDeck
    assert report["prefix_cache"]["reason"] == "off", report["prefix_cache"]
    assert "cache   prefix caching is off" in _text(report)
    lines = now(
        SummaryInputs(profile=deck.profile, host_label="sim", generated_at_s=0.0, metrics=metrics)
    )
    assert any("prefix cache" in line and "enable_prefix_caching=False" in line for line in lines)


def test_the_serving_strip_says_a_known_reason_only() -> None:
    """The Deck: a known reason as its own line; unknown (a workload may share nothing) not."""
    from widgets.load_strip import render_strip

    page = (FIXTURES / "metrics.txt").read_text()
    unknown = compute_metrics(parse_metrics(page, at_s=1.0))
    assert "prefix" not in render_strip(None, unknown).plain
    off = page.replace('enable_prefix_caching="True"', 'enable_prefix_caching="False"')
    before = parse_metrics(
        (FIXTURES / "metrics_before.txt").read_text().replace("True", "False"), at_s=0.0
    )
    lines = render_strip(None, compute_metrics(parse_metrics(off, at_s=10.0), before)).plain
    assert lines.splitlines()[-1].strip() == (
        "ⓘ prefix caching is off in the engine's args (enable_prefix_caching=False)"
    )


def test_a_p_d_engines_args_line_still_gives_caching_and_block_size() -> None:
    """With --kv-transfer-config the line holds a config object's repr, no Python literal:
    the two keys are read from its text (literal_eval alone lost both)."""
    line = (  # as vLLM 0.32's parser printed it for a prefill engine
        "(APIServer pid=1) INFO 12-06 19:50:00 [api_utils.py:286] non-default args: "
        "{'enable_prefix_caching': False, 'block_size': 32, 'kv_transfer_config': "
        "KVTransferConfig(kv_connector='NixlConnector', kv_role='kv_producer', kv_port=14579)}"
    )
    assert args_from_log([line]) == (False, 32)
