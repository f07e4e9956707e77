"""A Prometheus answer of any shape: rows, or one PrometheusError line, never a traceback;
label values with control characters never reach an output raw (fast tier, pure)."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from tui.core.formatting import printable
from tui.fleet.history import HostHistory
from tui.fleet.model import FleetRow
from tui.fleet.prom_answer import SANE_RANGES, matrix_series
from tui.fleet.prom_body import BoundedBody, PrometheusError
from tui.fleet.prometheus import fleet_answer_from_body, rows_from_vector
from tui.fleet.summary import fleet_markdown
from widgets.fleet_history import history_lines
from widgets.fleet_table import cells

WHERE = "prometheus http://prom:9090"
COLUMNS = sorted(SANE_RANGES)
ESC_HOST = "evil\x1b[2J\nforged-row [bold]x[/]"

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
label_values = st.text(max_size=6) | json_values
numbers = st.sampled_from(["1", "0", "NaN", "+Inf", "-Inf", "-5", "1e308", "abc", ""]) | json_values


@st.composite
def items(draw: st.DrawFn) -> Any:
    """A result item: a well-formed sample, or one with any part replaced by other JSON."""
    metric: dict[str, Any] = {
        "servedeck_host": draw(st.sampled_from(["h1", "h2", ESC_HOST]) | label_values),
        "servedeck_column": draw(st.sampled_from(COLUMNS) | label_values),
    }
    for name in draw(st.lists(st.sampled_from(["job", "state", "phase", "alert", "gpu"]))):
        metric[name] = draw(label_values)
    item: Any = {"metric": metric, "value": [draw(numbers), draw(numbers)]}
    shape = draw(st.sampled_from(["whole", "no-metric", "no-value", "metric", "value", "item"]))
    if shape == "no-metric":
        del item["metric"]
    elif shape == "no-value":
        del item["value"]
    elif shape == "metric":
        item["metric"] = draw(json_values)
    elif shape == "value":
        item["value"] = draw(json_values)
    elif shape == "item":
        item = draw(json_values)
    return item


@st.composite
def answers(draw: st.DrawFn) -> Any:
    """An answer whose envelope is Prometheus's or not, around a result of any items."""
    result: Any = draw(st.lists(items(), max_size=8))
    data: Any = {"resultType": "vector", "result": result}
    answer: Any = {"status": "success", "data": data}
    broken = draw(st.sampled_from(["none", "status", "data", "type", "result", "answer"]))
    if broken == "status":
        answer["status"] = draw(json_values)
    elif broken == "data":
        answer["data"] = draw(json_values)
    elif broken == "type":
        data["resultType"] = draw(json_values)
    elif broken == "result":
        data["result"] = draw(json_values)
    elif broken == "answer":
        answer = draw(json_values)
    return answer


def _figures_are_sane(row: FleetRow) -> None:
    for column in ("gpu_count", "power_w", "temp_c_max", "kv_pct", "gen_tok_s", "running"):
        value = getattr(row, column)
        low, high = SANE_RANGES[column]
        assert value is None or (math.isfinite(value) and low <= value <= high), (column, value)
    for size in (row.gpu_mem_used_bytes, row.gpu_mem_total_bytes):
        assert size is None or 0 <= size <= 1024**5


@settings(max_examples=400, deadline=None)
@given(answers())
def test_any_answer_is_rows_or_one_line(answer: Any) -> None:
    body = json.dumps(answer).encode()
    try:
        parsed = fleet_answer_from_body(body, 200, WHERE, now_s=100.0)
    except PrometheusError as error:
        assert "\n" not in str(error) and str(error).startswith(WHERE)
        return
    for row in parsed.rows:
        assert isinstance(row.host, str) and row.host
        _figures_are_sane(row)
        assert all(isinstance(alert, str) for alert in row.alerts)
        assert isinstance(row.unit_state, str | None) and isinstance(row.phase, str | None)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64) | st.text(max_size=64).map(str.encode))
def test_any_bytes_are_rows_or_one_line(body: bytes) -> None:
    try:
        fleet_answer_from_body(body, 502, WHERE, now_s=100.0)
    except PrometheusError as error:
        assert "\n" not in str(error) and "\x1b" not in str(error)


def _sample(value: Any, **labels: Any) -> dict[str, Any]:
    return {"metric": {"servedeck_host": "h1", **labels}, "value": [1.0, value]}


def test_malformed_items_are_skipped_not_raised() -> None:
    """The shapes that raised TypeError or AttributeError out of rows_from_vector."""
    result: list[Any] = [
        "not an object",
        [1, 2],
        {"metric": ["a", "b"], "value": [1, "1"]},
        _sample("8", servedeck_column="gpu_count"),
        _sample("1", servedeck_column="up", job=["dcgm"]),  # a list as a label value
        _sample("1", servedeck_column="unit_state", state={"nested": {"x": 1}}),
        _sample("1", servedeck_host=["h2"], servedeck_column="up"),
        {"metric": {"servedeck_host": "h1", "servedeck_column": "running"}},  # no value
        _sample({"x": 1}, servedeck_column="waiting"),
        _sample("abc", servedeck_column="kv_pct"),  # a string where a number goes
        {"metric": {"servedeck_host": "h1", "servedeck_column": "leftovers"}, "value": "3"},
    ]
    rows = rows_from_vector(result, now_s=100.0)
    assert [row.host for row in rows] == ["h1"] and rows[0].gpu_count == 8
    assert rows[0].unit_state is None and rows[0].waiting is None and rows[0].leftovers is None
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
    assert fleet_answer_from_body(body.encode(), 200, WHERE, 100.0).skipped_series == 10


def test_absurd_figures_are_na() -> None:
    def row(**values: str) -> FleetRow:
        samples = [_sample(v, servedeck_column=c) for c, v in values.items()]
        (found,) = rows_from_vector([_sample("1", servedeck_column="up", job="d"), *samples], 1.0)
        return found

    absurd = row(
        gpu_mem_used_mib="1e308",
        gpu_mem_total_mib="2e9",  # 2 PiB on one host
        power_w="+Inf",
        temp_c_max="NaN",
        kv_pct="-5",
        gen_tok_s="-Inf",
        gpu_count="1e308",
    )
    assert absurd.gpu_mem_used_bytes is None and absurd.gpu_mem_total_bytes is None
    assert absurd.power_w is None and absurd.temp_c_max is None and absurd.kv_pct is None
    assert absurd.gen_tok_s is None and absurd.gpu_count is None
    sane = row(gpu_mem_used_mib="1024", gpu_mem_total_mib="2048", power_w="5600", kv_pct="0")
    assert sane.gpu_mem_used_bytes == 1024**3 and sane.power_w == 5600 and sane.kv_pct == 0
    markdown = fleet_markdown([absurd], "lab")
    assert "e+308" not in markdown and "inf" not in markdown.lower() and "nan" not in markdown


def test_a_range_answer_keeps_only_series() -> None:
    series, skipped = matrix_series(
        [
            {"metric": {"servedeck_column": "running"}, "values": [[1, "2"], [2, "x"], "bad", [3]]},
            {"metric": {"servedeck_column": ["running"]}, "values": [[1, "2"]]},
            {"metric": {}, "values": {"1": "2"}},
            7,
        ]
    )
    assert skipped == 3 and len(series) == 1 and series[0].points == ((1.0, 2.0),)


def test_the_body_cap_counts_inflated_bytes() -> None:
    import zlib

    pack = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = pack.compress(b" " * (8 * 1024**2)) + pack.flush()
    body = BoundedBody(WHERE, "gzip", limit_bytes=1024**2)
    try:
        body.feed(bomb)
    except PrometheusError as error:
        assert "over 1 MiB" in str(error)
    else:
        raise AssertionError("an 8 MiB inflated body passed a 1 MiB cap")
    small = BoundedBody(WHERE, "gzip", limit_bytes=1024**2)
    small.feed(zlib.compress(b'{"a": 1}', wbits=31))
    assert bytes(small.finish()) == b'{"a": 1}'


def test_control_characters_never_reach_an_output_raw() -> None:
    assert printable("a\x1b[2Jb\nc\u202ed") == "a\\x1b[2Jb\\nc\\u202ed"
    assert printable("plain é 日本") == "plain é 日本"
    row = FleetRow(
        ESC_HOST,
        False,
        unit_state="active\x1b[31m",
        phase="weights\r",
        alerts=("Hot\x07",),
        error="ssh: \x1b]0;pwned\x07 refused",
        label="lab\x1b",
    )
    for compact in (False, True):
        plain = "".join(text.plain for text in cells(row, compact))
        assert not any(ch in plain for ch in "\x1b\n\r\x07"), plain
        assert "forged-row [bold" in plain or compact  # markup in a name is shown, not applied
    failed = HostHistory(ESC_HOST, 900.0, 15.0, 0.0, error="HTTP 502: \x1b[2Jbad\ngateway")
    drawn = "".join(Text.from_markup(line).plain for line in history_lines(failed, 80))
    assert not any(ch in drawn for ch in "\x1b\n") and "[bold]x[/]" in drawn
    markdown = fleet_markdown([row], "lab\x1b[2J")
    assert not any(ch in markdown for ch in "\x1b\r\x07")
    assert not any(line.startswith("forged-row") for line in markdown.splitlines())
    assert "evil\\x1b[2J" in markdown and "\\x1b]0;pwned\\x07" in markdown
