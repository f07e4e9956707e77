"""`servedeck bench --report run.html`: one self-contained page per run.

Inline CSS and SVG only: no script, font or image is fetched, so the file opens the same
offline, attached to a ticket or years later. It holds the configuration, one row per
level (client-bound and partial levels marked), charts over concurrency (output tok/s,
TTFT and TPOT p50/p99), each level's charts over time, the server's /metrics deltas per
level, and says where the run recorded no GPU telemetry rather than drawing nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from tui.bench.model import BenchResult, LevelResult
from tui.bench.repeats import repeat_lines, summary_from_dict
from tui.bench.report import report_lines

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; max-width: 1100px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
.bound { background: #fff3cd; } .charts { display: flex; flex-wrap: wrap; gap: 1em; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 12px; }
svg text { font: 11px system-ui, sans-serif; fill: #444; }
"""
_W, _H, _PAD = 340, 180, 36


def _num(value: float | None, spec: str = ",.1f") -> str:
    return "n/a" if value is None else format(value, spec)


def _load(level: LevelResult) -> str:
    return f"c={level.concurrency}" if level.request_rate is None else f"{level.request_rate:g}/s"


def line_chart(
    title: str, xs: Sequence[float], series: Sequence[tuple[str, str, Sequence[float | None]]]
) -> str:
    """An inline SVG line chart: one polyline a series, points where measured."""
    seen = [v for _, _, values in series for v in values if v is not None]
    top = max(seen, default=0.0) or 1.0
    low_x, high_x = (min(xs), max(xs)) if xs else (0.0, 1.0)
    span_x = (high_x - low_x) or 1.0

    def point(x: float, y: float) -> str:
        px = _PAD + (x - low_x) / span_x * (_W - 2 * _PAD)
        py = _H - _PAD - y / top * (_H - 2 * _PAD)
        return f"{px:.1f},{py:.1f}"

    parts = [
        f'<svg width="{_W}" height="{_H}" role="img">',
        f"<title>{escape(title)}</title>",
        f'<text x="{_PAD}" y="14">{escape(title)}</text>',
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#999"/>',
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}" stroke="#999"/>',
        f'<text x="2" y="{_PAD + 4}">{escape(_num(top, ",.3g"))}</text>',
        f'<text x="{_PAD}" y="{_H - _PAD + 14}">{escape(_num(low_x, "g"))}</text>',
        f'<text x="{_W - _PAD - 20}" y="{_H - _PAD + 14}">{escape(_num(high_x, "g"))}</text>',
    ]
    for row, (name, colour, values) in enumerate(series):
        points = [point(x, y) for x, y in zip(xs, values, strict=False) if y is not None]
        if points:
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                f'points="{" ".join(points)}"/>'
            )
        parts.append(
            f'<text x="{_W - _PAD - 90}" y="{14 + 13 * row}" style="fill:{colour}">'
            f"{escape(name)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _levels_table(levels: Sequence[LevelResult]) -> str:
    heads = ("load", "ok", "fail", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "ITL p99 ms",
             "out tok/s", "req/s", "client")  # fmt: skip
    rows = []
    for lv in levels:
        measured = lv.completed > 0
        client = lv.client_load.describe() if lv.client_load and lv.client_bound else "kept up"
        client = "n/a" if lv.client_load is None else client
        cells = (
            _load(lv) + (" *" if lv.partial else ""),
            f"{lv.completed}/{lv.num_requests}",
            str(lv.failed),
            _num(lv.ttft.median_ms if lv.ttft.count else None),
            _num(lv.ttft.p99_ms if lv.ttft.count else None),
            _num(lv.tpot.median_ms if lv.tpot.count else None, ",.2f"),
            _num(lv.itl.p99_ms if lv.itl.count else None, ",.2f"),
            _num(lv.output_throughput if measured else None),
            _num(lv.request_throughput if measured else None, ",.2f"),
        )
        row = (
            "".join(f"<td>{escape(c)}</td>" for c in cells) + f'<td class="l">{escape(client)}</td>'
        )
        rows.append(f'<tr class="{"bound" if lv.client_bound else ""}">{row}</tr>')
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _config_table(result: BenchResult) -> str:
    ctx = result.context
    pairs = [
        ("model", ctx.model), ("server", ctx.base_url or ctx.host),
        ("engine", f"{ctx.engine} {ctx.engine_version}".strip()), ("GPUs", ctx.gpus or "unknown"),
        ("TP / EP", f"TP{ctx.tp}" + ("+EP" if ctx.ep else "")), ("config", ctx.config_hash or "n/a"),
        ("preset", result.preset), ("endpoint", result.endpoint),
        ("input / output tokens", f"{result.input_tokens} / {result.output_tokens}"),
        ("temperature, ignore_eos", f"{result.temperature:g}, {result.ignore_eos}"),
        ("started", result.started_at), ("run", result.run_id),
        *((str(key), str(value)) for key, value in sorted(result.client.items())),
    ]  # fmt: skip
    rows = "".join(
        f'<tr><th class="l">{escape(k)}</th><td class="l">{escape(v)}</td></tr>' for k, v in pairs
    )
    return f"<table>{rows}</table>"


def _server_table(levels: Sequence[LevelResult]) -> str:
    views = [(lv, lv.server) for lv in levels if lv.server is not None]
    if not views:
        return "<p>No server /metrics were read for this run.</p>"
    heads = ("load", "requests", "queue ms", "prefill ms", "decode ms", "prompt tok", "gen tok",
             "prefix hit")  # fmt: skip
    rows = []
    for lv, sv in views:
        hit = sv.prefix_hit_rate
        cells = (_load(lv), _num(sv.requests, ",.0f"), _num(sv.mean_queue_ms),
                 _num(sv.mean_prefill_ms), _num(sv.mean_decode_ms), _num(sv.prompt_tokens, ",.0f"),
                 _num(sv.generation_tokens, ",.0f"),
                 "n/a" if hit is None else f"{100 * hit:.1f}%")  # fmt: skip
        rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _over_concurrency(levels: Sequence[LevelResult]) -> str:
    closed = [lv for lv in levels if lv.request_rate is None and lv.completed]
    if len(closed) < 2:
        return "<p>One level: no chart over concurrency.</p>"
    xs = [float(lv.concurrency) for lv in closed]
    return (
        '<div class="charts">'
        + line_chart("output tok/s", xs, [("tok/s", "#2a7", [lv.output_throughput for lv in closed])])
        + line_chart("TTFT ms", xs, [("p50", "#c80", [lv.ttft.median_ms for lv in closed]),
                                      ("p99", "#c33", [lv.ttft.p99_ms for lv in closed])])
        + line_chart("TPOT ms", xs, [("p50", "#36c", [lv.tpot.median_ms for lv in closed]),
                                      ("p99", "#93c", [lv.tpot.p99_ms for lv in closed])])
        + "</div>"
    )  # fmt: skip


def _over_time(level: LevelResult) -> str:
    slices = level.over_time
    if len(slices) < 2:
        return "<p>Too short for a chart over time.</p>"
    xs = [s.start_s for s in slices]
    return (
        '<div class="charts">'
        + line_chart("output tok/s over time (s)", xs,
                     [("tok/s", "#2a7", [s.output_tok_s for s in slices])])
        + line_chart("running over time (s)", xs, [("running", "#36c", [s.running for s in slices])])
        + line_chart("TTFT p50 ms over time (s)", xs,
                     [("TTFT", "#c80", [s.ttft_p50_ms for s in slices])])
        + "</div>"
    )  # fmt: skip


def html_report(result: BenchResult) -> str:
    """The whole page as one string."""
    title = f"servedeck bench: {result.preset} on {result.context.host or result.context.base_url}"
    sections = [
        f"<h1>{escape(title)}</h1>",
        "<p>PARTIAL: the run was cancelled or did not finish every level.</p>"
        if result.partial
        else "",
        "<h2>Levels</h2>",
        _levels_table(result.levels),
        "<h2>Over concurrency</h2>",
        _over_concurrency(result.levels),
        "<h2>Configuration</h2>",
        _config_table(result),
        "<h2>Server metrics per level</h2>",
        _server_table(result.levels),
        "<h2>GPU telemetry</h2>",
        "<p>Not recorded by a benchmark run (the capacity search records it per level).</p>",
    ]
    repeats = summary_from_dict(result.client.get("repeat"))
    if repeats is not None:
        sections += [
            "<h2>Repeated runs</h2>",
            f"<pre>{escape(chr(10).join(repeat_lines(repeats)))}</pre>",
        ]
    for level in result.levels:
        sections += [
            f"<h2>Level {escape(_load(level))}</h2>",
            _over_time(level),
            f"<pre>{escape(chr(10).join(report_lines(level)))}</pre>",
        ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        + "".join(sections)
        + "</body></html>"
    )
