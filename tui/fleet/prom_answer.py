"""The shape of a Prometheus API answer, checked before any of it is believed.

A server (or a proxy in front of one) can answer anything: a result item that is not an
object, a list as a label value, nested JSON, a string where a number goes, 1e308. The
envelope (status, data, resultType, result) must be Prometheus's or the answer is one
`PrometheusError` line; a result item of the wrong shape is skipped and counted; a value
outside what the column can physically be is None (n/a), never printed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from tui.core.formatting import printable
from tui.fleet.prom_body import PrometheusError

# More JSON objects and lists than this (a `{` or `[` byte, counted before parsing) is
# refused: 5,000 hosts of the fleet query hold about 450,000, and a body of empty
# objects would otherwise cost ~24 bytes of memory per byte read.
MAX_JSON_CONTAINERS = 1_000_000

_PIB_MIB = 1024**3  # 1 PiB in MiB
# What each column's value can be on one host; outside it the series is nonsense (n/a).
SANE_RANGES: dict[str, tuple[float, float]] = {
    "up": (0, 1),
    "age_s": (0, 10 * 365 * 86400),
    "gpu_count": (0, 4096),
    "gpu_mem_used_mib": (0, _PIB_MIB),
    "gpu_mem_total_mib": (0, _PIB_MIB),
    "gpu_mem_used_pct_max": (0, 100),
    "gpu_util_pct_sum": (0, 4096 * 100),
    "gpu_util_pct_max": (0, 100),
    "temp_c_max": (0, 200),
    "power_w": (0, 100_000),
    "xid": (0, 2**31),
    "running": (0, 1e9),
    "waiting": (0, 1e9),
    "kv_pct": (0, 100),
    "gen_tok_s": (0, 1e9),
    "ttft_p50_s": (0, 1e6),
    "ttft_p99_s": (0, 1e6),
    "unit_state": (0, 1),
    "phase": (0, 1),
    "shards_done": (0, 1e6),
    "shards_total": (0, 1e6),
    "eta_s": (0, 1e7),
    "ready": (0, 1),
    "leftovers": (0, 1e6),
    "alert": (0, 1),
}


def sane_value(column: str, value: float | None) -> float | None:
    """The value if the column can be it (finite, in SANE_RANGES), else None."""
    if value is None or not math.isfinite(value):
        return None
    low, high = SANE_RANGES.get(column, (-math.inf, math.inf))
    return value if low <= value <= high else None


def answer_data(body: bytes | bytearray, status_code: int, where: str) -> dict[str, Any]:
    """The `data` object of a successful answer; anything else is one PrometheusError line."""
    if body.count(b"{") + body.count(b"[") > MAX_JSON_CONTAINERS:
        raise PrometheusError(where, f"answer holds over {MAX_JSON_CONTAINERS:,} JSON objects")
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the stack
        answer = None
    if not isinstance(answer, dict) or answer.get("status") != "success":
        detail = answer.get("error") if isinstance(answer, dict) else None
        if detail is None:
            detail = bytes(body[:200]).decode("utf-8", "replace").strip()
        text = printable(str(detail))[:200] or "not a Prometheus API answer"
        raise PrometheusError(where, f"HTTP {status_code}: {text}")
    data = answer.get("data")
    if not isinstance(data, dict):
        raise PrometheusError(where, "answer's data is not an object")
    return data


def result_of(data: dict[str, Any], kind: Literal["vector", "matrix"], where: str) -> list[Any]:
    """`data.result`, which must be a list of the kind asked for."""
    if data.get("resultType") != kind:
        found = printable(str(data.get("resultType")))[:40]
        raise PrometheusError(where, f"answer's resultType is {found}, not {kind}")
    result = data.get("result")
    if not isinstance(result, list):
        raise PrometheusError(where, "answer's data.result is not a list")
    return result


def labels_of(item: Any) -> dict[str, str] | None:
    """A result item's labels; None when the item or a label value is not Prometheus's shape."""
    if not isinstance(item, dict):
        return None
    metric = item.get("metric", {})
    if not isinstance(metric, dict) or not all(isinstance(v, str) for v in metric.values()):
        return None
    return metric


def _number(raw: Any) -> float:
    """A JSON number or a numeric string ('NaN' and '+Inf' read as floats); else ValueError."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise ValueError(raw)
    return float(raw)


def sample_of(pair: Any) -> tuple[float, float] | None:
    """A `[time, "value"]` pair; None when it is not one (a value may still be NaN)."""
    if not isinstance(pair, list) or len(pair) != 2:
        return None
    try:
        stamp, value = _number(pair[0]), _number(pair[1])
    except (ValueError, OverflowError):
        return None
    return (stamp, value) if math.isfinite(stamp) else None


@dataclass(frozen=True, slots=True)
class VectorSample:
    labels: dict[str, str]
    value: float  # may be NaN or inf: the column decides (sane_value)


def vector_samples(result: list[Any]) -> tuple[list[VectorSample], int]:
    """The well-formed samples of an instant vector, and how many items were not."""
    samples: list[VectorSample] = []
    skipped = 0
    for item in result:
        labels = labels_of(item)
        sample = sample_of(item.get("value")) if labels is not None else None
        if labels is None or sample is None:
            skipped += 1
            continue
        samples.append(VectorSample(labels, sample[1]))
    return samples, skipped


@dataclass(frozen=True, slots=True)
class RangeSeries:
    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]  # (time, value); malformed pairs left out


def matrix_series(result: list[Any]) -> tuple[list[RangeSeries], int]:
    """The series of a range answer, and how many items were not series (skipped)."""
    series: list[RangeSeries] = []
    skipped = 0
    for item in result:
        labels = labels_of(item)
        values = item.get("values") if labels is not None else None
        if labels is None or not isinstance(values, list):
            skipped += 1
            continue
        points = (sample_of(pair) for pair in values)
        series.append(RangeSeries(labels, tuple(p for p in points if p is not None)))
    return series, skipped
