"""`servedeck bench`'s text output: a run's levels as a table, its headline and warnings."""

from __future__ import annotations

from tui.bench.model import BenchResult, LevelResult
from tui.bench.repeats import repeat_lines, summary_from_dict
from tui.bench.report import report_lines
from tui.commands._width import hanging


def _ms(value: float) -> str:
    return f"{value:,.1f}"


def format_level(level: LevelResult) -> str:
    """One level per line, 80 columns at most; `*` after the load marks a partial level."""
    load = f"c={level.concurrency}" if level.request_rate is None else f"{level.request_rate:g}/s"
    load += "*" if level.partial else ""
    load += "!" if level.client_bound else ""
    return (
        f"{load:>7} {level.completed:>5}/{level.num_requests:<5} {level.failed:>4} "
        f"{_ms(level.ttft.median_ms):>8} {_ms(level.ttft.p99_ms):>8} "
        f"{_ms(level.tpot.median_ms):>8} {_ms(level.itl.p99_ms):>8} "
        f"{level.output_throughput:>9,.1f} {level.request_throughput:>6.2f}"
    )


def _input_words(result: BenchResult) -> str:
    """The prompt tokens actually sent (the server's count), and the target when it differs."""
    sent = result.input_tokens_sent
    if sent is None or sent == result.input_tokens:
        return f"{result.input_tokens} tok"
    return f"{sent} tok sent (asked {result.input_tokens})"


def format_result(result: BenchResult) -> str:
    context = result.context
    lines = [
        hanging(
            "servedeck bench: ",
            f"{result.preset} on {context.host or context.base_url}  model {context.model}  "
            f"{context.engine} {context.engine_version}".rstrip(),
        ),
        hanging(
            "  ",
            f"input {_input_words(result)}, output {result.output_tokens} tok, "
            f"{result.endpoint}, temperature {result.temperature:g}, ignore_eos {result.ignore_eos}",
        ),
        f"{'load':>7} {'ok/sent':>11} {'fail':>4} {'TTFT p50':>8} {'TTFT p99':>8} "
        f"{'TPOT p50':>8} {'ITL p99':>8} {'out tok/s':>9} {'req/s':>6}",
    ]
    lines += [format_level(level) for level in result.levels]
    for level in result.levels:
        lines += report_lines(level)
    for level in result.levels:
        if level.errors:
            lines.append(f"  c={level.concurrency}: first error: {level.errors[0]}")
        server = level.server
        if server and server.requests:
            parts = [
                f"{label} {value:,.1f} ms"
                for label, value in (
                    ("queue", server.mean_queue_ms),
                    ("prefill", server.mean_prefill_ms),
                    ("decode", server.mean_decode_ms),
                )
                if value is not None
            ]
            lines.append(f"  c={level.concurrency}: server mean " + ", ".join(parts))
    single = result.single_stream_tok_s
    if single:
        lines.append(f"single stream {single:,.1f} tok/s (output tok/s at concurrency 1)")
    decode = result.decode_tok_s_per_stream
    if decode:
        lines.append(f"decode {decode:,.1f} tok/s per stream (1 / mean TPOT at concurrency 1)")
    prefill = [lv.prefill_tok_s_per_request for lv in result.levels if lv.concurrency == 1]
    if prefill and prefill[0]:
        lines.append(f"prefill {prefill[0]:,.0f} prompt tok/s per request (prompt / TTFT)")
    if result.client.get("lengths"):
        lines.append(f"lengths per request: {result.client['lengths']} tok")
    method = result.client.get("prompt_method")
    if method:
        lines.append(f"prompt tokens: {method}")
    if result.levels and result.levels[0].output_tokens_source != "usage":
        lines.append(f"output tokens: {result.levels[0].output_tokens_source}")
    intended = result.client.get("intended_prefix_hit_rate")
    if intended is not None:
        measured = result.client.get("measured_prefix_hit_rate")
        shown = "n/a (no prefix-cache metrics)" if measured is None else f"{100 * measured:.1f}%"
        lines.append(
            f"prefix cache hit rate: measured {shown}, intended {100 * intended:.1f}% "
            f"({result.client.get('workload')}; reset: {result.client.get('prefix_cache_reset')})"
        )
    bound = [lv for lv in result.levels if lv.client_bound]
    if bound:
        loads = ", ".join(f"c={lv.concurrency}" for lv in bound)
        lines.append(f"! CLIENT-BOUND at {loads}: the client's limit, not the server's")
    if result.partial:
        lines.append("PARTIAL: the run was cancelled or did not finish every level")
    repeats = summary_from_dict(result.client.get("repeat"))
    if repeats is not None:
        lines += repeat_lines(repeats)
    return "\n".join(lines)
