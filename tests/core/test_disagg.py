"""Prefill/decode roles and NIXL transfers: the role from vLLM's own args line, the warnings."""

from __future__ import annotations

from tui.serving.disagg import pd_line, pd_warnings, role_from_log, role_from_metrics
from tui.serving.metrics import compute_metrics, parse_metrics

# Printed by vLLM 0.32.0's own parser (vllm.entrypoints.launchers.cli_args.make_arg_parser,
# then api_utils.get_non_default_args) for --kv-transfer-config '{"kv_connector":
# "NixlConnector","kv_role":"kv_producer"}': a KVTransferConfig repr, not a literal.
REAL_ARGS_LINE = (
    "(APIServer pid=1) INFO 12-06 19:50:00 [api_utils.py:286] non-default args: {'model': 'x', "
    "'kv_transfer_config': KVTransferConfig(kv_connector='NixlConnector', engine_id='b43b', "
    "kv_buffer_device='cpu', kv_role='kv_producer', kv_port=14579, "
    "kv_connector_extra_config={}, kv_connector_module_path=None, "
    "enable_permute_local_kv=False, kv_load_failure_policy='fail')}"
)


def page(transfers: int, failed: int, running: int, consumer: bool = True) -> str:
    labels = 'model_name="m",engine="0"'
    out = [
        "# TYPE vllm:num_requests_running gauge",
        f"vllm:num_requests_running{{{labels}}} {running}",
        "# TYPE vllm:nixl_xfer_time_seconds histogram",
        f'vllm:nixl_xfer_time_seconds_bucket{{{labels},le="0.05"}} {transfers}',
        f'vllm:nixl_xfer_time_seconds_bucket{{{labels},le="+Inf"}} {transfers}',
        f"vllm:nixl_xfer_time_seconds_count{{{labels}}} {transfers}",
        f"vllm:nixl_xfer_time_seconds_sum{{{labels}}} 0.1",
        "# TYPE vllm:nixl_num_failed_transfers_total counter",
        f"vllm:nixl_num_failed_transfers_total{{{labels}}} {failed}",
    ]
    if consumer:
        out += [
            "# TYPE vllm:num_requests_kv_fetch_by_stage gauge",
            f'vllm:num_requests_kv_fetch_by_stage{{{labels},stage="in_progress"}} 0',
        ]
    return "\n".join(out) + "\n"


def test_the_role_comes_from_the_real_args_line() -> None:
    assert role_from_log(["starting", REAL_ARGS_LINE]) == "prefill"
    assert role_from_log([REAL_ARGS_LINE.replace("kv_producer", "kv_consumer")]) == "decode"
    assert role_from_log(["non-default args: {'model': 'x'}"]) is None  # no P/D
    assert role_from_log([]) is None


def test_nixl_figures_per_engine_and_failures_warn() -> None:
    before = parse_metrics(page(10, 0, 4), at_s=1.0)
    metrics = compute_metrics(parse_metrics(page(14, 3, 4), at_s=6.0), before)
    (row,) = metrics.kv_transfers
    assert (row.engine, row.consumer, row.transfers_total) == ("0", True, 14)
    assert (row.transfers_in_interval, row.failed_total, row.failed_in_interval) == (4, 3, 3)
    assert role_from_metrics(metrics.kv_transfers) == "decode"
    assert pd_warnings(None, metrics.kv_transfers, metrics.engines) == (
        "KV transfers failing on engine 0: 3 failed in the interval "
        "(vllm:nixl_num_failed_transfers 3)",
    )
    assert pd_line(None, metrics.kv_transfers) == "P/D decode: KV transfers 14, failed 3"


def test_decode_serving_with_no_transfer_in_says_prefill_handled_none() -> None:
    before = parse_metrics(page(10, 0, 4), at_s=1.0)
    metrics = compute_metrics(parse_metrics(page(10, 0, 4), at_s=6.0), before)
    (warning,) = pd_warnings(None, metrics.kv_transfers, metrics.engines)
    assert warning.startswith("prefill engine handled 0 requests: decode engine 0 serves")
    # an idle decode engine, or a first scrape (no interval), is no evidence
    idle = compute_metrics(parse_metrics(page(10, 0, 0), at_s=6.0), before)
    assert pd_warnings(None, idle.kv_transfers, idle.engines) == ()
    first = compute_metrics(parse_metrics(page(10, 0, 4), at_s=6.0))
    assert pd_warnings(None, first.kv_transfers, first.engines) == ()


def test_without_p_d_nothing_is_shown_and_nothing_is_zero() -> None:
    metrics = compute_metrics(
        parse_metrics(
            '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine="0"} 1\n'
        )
    )
    assert metrics.kv_transfers == ()
    assert pd_line(None, metrics.kv_transfers) is None
    assert role_from_metrics(metrics.kv_transfers) is None
