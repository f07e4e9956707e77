"""Hypothesis fuzzing of the parsers that read what a server or host sends: Prometheus
text, nvidia-smi CSV, systemctl show and the SSE byte stream (issue 16). No input
may raise anything but the parser's own one-line error, and none may take long.
Profiles, journal JSON and log patterns have their own files (test_hostile_*.py,
test_pattern_linearity.py).
"""

from __future__ import annotations

import asyncio
import math
import time

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.bench.client import stream_request
from tui.bench.model import RequestOutcome
from tui.core.errors import ServedeckError
from tui.gpu.smi_parse import (
    QUERY_GPU_FIELDS,
    parse_compute_apps,
    parse_query_gpu_line,
    parse_query_gpu_static,
    parse_topo,
    parse_versions,
)
from tui.serving.metrics import compute_metrics, parse_metrics
from tui.serving.unit.service import parse_systemctl_show

FUZZ = settings(max_examples=200, deadline=1000, suppress_health_check=[HealthCheck.too_slow])

_numbers = st.sampled_from(
    ["0", "1", "-1", "NaN", "+Inf", "-Inf", "1e400", "1e-400", "3.5", "9" * 400, "x", ""]
)
_metric_names = st.sampled_from(
    [
        "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:num_preemptions_total",
        "vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket",
        "sglang:token_usage", "other_metric",
    ]
)  # fmt: skip


@st.composite
def metrics_pages(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        name = draw(_metric_names)
        if draw(st.booleans()):
            kind = draw(st.sampled_from(["counter", "gauge", "histogram", "untyped", "bogus"]))
            lines.append(f"# TYPE {name.removesuffix('_total').removesuffix('_bucket')} {kind}")
        labels = ""
        if name.endswith("_bucket"):
            labels = f'{{le="{draw(_numbers)}"}}'
        elif draw(st.booleans()):
            labels = f'{{engine="{draw(st.text(max_size=4))}"}}'
        lines.append(f"{name}{labels} {draw(_numbers)}")
    if draw(st.booleans()):
        lines.append(draw(st.text(max_size=40)))
    return "\n".join(lines) + "\n"


@FUZZ
@given(metrics_pages(), metrics_pages())
def test_prometheus_text_gives_finite_metrics_or_one_error(before: str, after: str) -> None:
    try:
        first = parse_metrics(before, at_s=1.0)
        second = parse_metrics(after, at_s=2.0)
    except ServedeckError as error:
        assert "\n" not in str(error)
        return
    metrics = compute_metrics(second, first)
    for name in metrics.__dataclass_fields__:
        value = getattr(metrics, name)
        if isinstance(value, float):
            assert math.isfinite(value), (name, value)


def test_nan_and_inf_gauges_are_not_available() -> None:
    page = (
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running NaN\n"
        "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting +Inf\n"
        "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc -Inf\n"
    )
    metrics = compute_metrics(parse_metrics(page, at_s=1.0))
    assert (metrics.running_reqs, metrics.waiting_reqs, metrics.kv_cache_usage_pct) == (
        None,
        None,
        None,
    )


_csv_cells = st.one_of(_numbers, st.sampled_from(["[N/A]", "[Not Supported]", "GPU-x", " "]))


@FUZZ
@given(st.lists(_csv_cells, max_size=len(QUERY_GPU_FIELDS) + 2), st.text(max_size=30))
def test_nvidia_smi_csv_lines_never_raise(cells: list[str], noise: str) -> None:
    for line in (", ".join(cells), noise, ", ".join(cells) + noise):
        parse_query_gpu_line(line)
        parse_query_gpu_static(line)
        parse_compute_apps(line)
        parse_compute_apps(line, {"GPU-x": 0})
        parse_topo(line)
        parse_versions(line)


_show_keys = st.sampled_from(
    ["Id", "ActiveState", "MainPID", "ExecMainStartTimestamp", "ExecMainStatus", "NRestarts"]
)
_show_values = st.one_of(
    _numbers,
    st.sampled_from(
        [
            "@1e400", "@nan", "@-1e300", "Sat 0001-01-01 00:00:00 UTC",
            "Fri 9999-12-31 23:59:59 UTC", "Sat 2026-11-29 16:31:28 CET", "n/a",
        ]
    ),
    st.text(max_size=20),
)  # fmt: skip


@FUZZ
@given(st.lists(st.tuples(_show_keys, _show_values), max_size=8), st.text(max_size=40))
def test_systemctl_show_never_raises(pairs: list[tuple[str, str]], noise: str) -> None:
    text = "\n".join(f"{key}={value}" for key, value in pairs) + "\n" + noise
    state = parse_systemctl_show("vllm.service", text)
    assert state.started_at_s is None or math.isfinite(state.started_at_s)


# The SSE reader is the client's own code; the bytes come through httpx's MockTransport
# so hypothesis can try thousands of streams (the real broken servers are in
# test_bench_broken_sse.py).
_sse_pieces = st.sampled_from(
    [
        b"data: ", b'{"choices":[{"text":"t"}]}', b"\n\n", b"\r\n", b"\n", b": keep-alive",
        b"data: [DONE]", b"null", b"123", b'{"usage":{"completion_tokens":3}}', b"[", b"{",
        b'{"error":{"message":"x"}}', b"\xff\xfe", b"data:", b"event: x",
    ]
)  # fmt: skip


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_sse_pieces, max_size=6).map(b"".join), max_size=8))
def test_any_sse_byte_stream_ends_the_request_with_an_outcome(chunks: list[bytes]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=httpx.ByteStream(b"".join(chunks)))

    async def run() -> RequestOutcome:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            outcome = RequestOutcome(prompt_tokens=1)
            return await stream_request(
                client, "http://x/v1/completions", {}, outcome, read_timeout_s=5
            )

    outcome = asyncio.run(run())
    assert outcome.success or outcome.error


def _run_stream(chunks: list[bytes]) -> RequestOutcome:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=httpx.ByteStream(b"".join(chunks)))

    class Pieces(httpx.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[override]
            for chunk in chunks:
                yield chunk

    def piecewise(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=Pieces())

    async def run() -> RequestOutcome:
        async with httpx.AsyncClient(transport=httpx.MockTransport(piecewise)) as client:
            outcome = RequestOutcome(prompt_tokens=1)
            return await stream_request(
                client, "http://x/v1/completions", {}, outcome, read_timeout_s=5
            )

    return asyncio.run(run())


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 20),
    st.sampled_from([b"\n", b"\r\n"]),
    st.lists(st.integers(1, 40), min_size=1, max_size=30),
)
def test_sse_framing_counts_every_token_however_the_bytes_are_split(
    tokens: int, newline: bytes, cuts: list[int]
) -> None:
    """Events split at any byte (a \\r\\n across two reads too) are read exactly once."""
    event = b'data: {"choices":[{"text":"t"}]}' + newline + newline
    usage = b'data: {"choices":[],"usage":{"completion_tokens":%d}}' % tokens
    body = event * tokens + usage + newline + newline + b"data: [DONE]" + newline + newline
    chunks, position = [], 0
    for size in cuts * (len(body) // max(1, sum(cuts)) + 1):
        if position >= len(body):
            break
        chunks.append(body[position : position + size])
        position += size
    chunks.append(body[position:])
    outcome = _run_stream(chunks)
    assert outcome.success, outcome.error
    assert outcome.chunks == tokens and outcome.output_tokens == tokens


def test_an_endless_sse_event_in_small_pieces_fails_fast() -> None:
    started = time.perf_counter()
    outcome = _run_stream([b"data: "] + [b"7" * 512] * (10 * 2048))
    assert time.perf_counter() - started < 20
    assert outcome.error and "over 4 MiB" in outcome.error
