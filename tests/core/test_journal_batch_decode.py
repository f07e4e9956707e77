"""Journal stream lines decoded a read at a time answer exactly as line by line (issue 18).

The journal follower takes a batch of `journalctl -o json` lines, decodes each entry,
classifies the batch's messages as one run (with their priorities) and puts skipped
entries' warnings back at their places. Checked against the line-by-line decoding on
generated streams: good and duplicate entries, tracebacks across batch edges, colours,
priorities, cut JSON, non-objects, deep JSON, overlong lines, in batches of every size.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.log_samples import TRICKY_LEVEL_LINES, captured_lines
from tui.hosts.base import OVERLONG_LINE
from tui.hosts.local import LocalHost
from tui.logs.classify import LevelClassifier
from tui.logs.journal import JournalFollower
from tui.logs.journal_entry import flood_columns, loads_entry
from tui.logs.line import LogLine

MESSAGES = [*TRICKY_LEVEL_LINES, *captured_lines()[:40], "a multi\nline entry", "kernel says no"]


def _entry(cursor: int, message: object, priority: object) -> str:
    fields: dict[str, object] = {"__CURSOR": f"c{cursor}", "MESSAGE": message}
    fields["__REALTIME_TIMESTAMP"] = str(1_800_000_000_000_000 + cursor)
    if priority is not None:
        fields["PRIORITY"] = priority
    return json.dumps(fields)


_good = st.builds(
    _entry,
    st.integers(0, 30),  # repeated cursors: an entry seen again is dropped
    st.one_of(
        st.sampled_from(MESSAGES),
        st.lists(st.integers(0, 255), max_size=6),
        st.integers(),  # beyond 64 bits too: an int, never a float
        st.floats(allow_nan=False),
    ),
    st.sampled_from([None, "3", "4", "6", "7", "9", "high", 4, 2**70, [6], {"p": 6}]),
)
_bad = st.sampled_from(
    [
        '{"__CURSOR": "cut", "MESSAGE": "no end',  # cut JSON
        '["not", "an", "object"]',
        '{"__CURSOR": "deep", "MESSAGE": ' + "[" * 5000 + "]" * 5000 + "}",
        OVERLONG_LINE,
        "-- No entries --",
        '{"MESSAGE": {"nested": "object"}}',
    ]
)


def _line_by_line(follower: JournalFollower, raws: list[str]) -> list[LogLine]:
    """The follower's reading one stream line at a time (a cut line warns when more follow)."""
    lines: list[LogLine] = []
    for raw in raws:
        if follower._cut_line:
            follower._cut_line = False
            warning = follower._skipped("not whole JSON (cut, or too long)")
            if warning is not None:
                lines.append(warning)
        line = follower._decode(raw)
        if line is not None:
            lines.append(line)
    return lines


def _json_only(raw: str) -> object:
    return json.loads(raw)


def _state(follower: JournalFollower) -> tuple[object, ...]:
    return (follower.last_cursor, follower.skipped_entries, follower._cut_line)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(_good, _good, _good, _bad), max_size=40),
    st.lists(st.integers(1, 12), min_size=1, max_size=8),
)
def test_batches_decode_as_line_by_line(raws: list[str], sizes: list[int]) -> None:
    one = JournalFollower(LocalHost(), "x.service", follow=False)
    many = JournalFollower(LocalHost(), "x.service", follow=False)
    with patch("tui.logs.journal.loads_entry", _json_only):  # the reading before orjson
        expected = _line_by_line(one, raws)
    got: list[LogLine] = []
    start = 0
    for index in range(len(raws)):  # batches of the given sizes, in turn
        size = sizes[index % len(sizes)]
        if start >= len(raws):
            break
        got += many._decode_batch(raws[start : start + size])
        start += size
    assert got == expected
    assert _state(many) == _state(one)


def test_a_flood_batch_keeps_cursor_time_priority_and_level() -> None:
    raws = [_entry(i, MESSAGES[i % len(MESSAGES)], str(i % 8)) for i in range(2000)]
    one = JournalFollower(LocalHost(), "x.service", follow=False)
    many = JournalFollower(LocalHost(), "x.service", follow=False)
    got = many._decode_batch(raws)
    assert got == _line_by_line(one, raws)
    assert len(got) == 2000 and many.last_cursor == "c1999"
    assert {line.priority for line in got} == set(range(8))
    assert all(line.timestamp_s and line.cursor for line in got)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(MESSAGES), st.sampled_from([None, 0, 3, 4, 5, 6, 7])),
        max_size=30,
    ),
    st.integers(1, 10),
)
def test_classify_many_with_priorities_matches_classify(
    lines: list[tuple[str, int | None]], size: int
) -> None:
    one, many = LevelClassifier(), LevelClassifier()
    expected = [one.classify(text, priority) for text, priority in lines]
    got: list[str] = []
    for start in range(0, len(lines), size):
        chunk = lines[start : start + size]
        got += many.classify_many(
            [text for text, _ in chunk], priorities=[priority for _, priority in chunk]
        )
    assert got == expected


READ = ("MESSAGE", "PRIORITY", "__CURSOR", "__REALTIME_TIMESTAMP")


def _reading(loads: Callable[[str], object], raw: str) -> tuple[str, str]:
    """What the follower takes from a line: an object's fields read, anything else whole."""
    try:
        value = loads(raw)
    except RecursionError:
        return ("too deep", "")
    except ValueError:
        return ("not JSON", "")
    if isinstance(value, dict):
        return ("entry", repr([(name in value, value.get(name)) for name in READ]))
    return ("other", repr(value))


_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
_json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from([*READ, "_PID", "x"]) | st.text(max_size=3), inner)
    ),
    max_leaves=12,
)
_entries = st.dictionaries(
    st.sampled_from([*READ, "_PID", "_CMDLINE"]),
    _json_values | st.lists(st.integers(), max_size=5),
)
_json_like = st.text(alphabet='{}[]":,0123456789.eE+- \\untrfalsNI\ud800\x00', max_size=30)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_entries.map(json.dumps), _json_values.map(json.dumps), _json_like))
def test_loads_entry_reads_as_json_loads(raw: str) -> None:
    assert _reading(loads_entry, raw) == _reading(json.loads, raw)


@pytest.mark.parametrize(
    "raw",
    [
        '{"MESSAGE": 123456789012345678901234567890}',
        '{"MESSAGE": [104, 123456789012345678901234567890]}',
        '{"PRIORITY": -9223372036854775809}',
        '{"MESSAGE": 1e400}',
        '{"MESSAGE": NaN}',
        '{"MESSAGE": "\\ud800"}',
        '{"MESSAGE": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"MESSAGE": "x", "_PID": ' + "[" * 1010 + "]" * 1010 + "}",  # json's limit, not orjson's
    ],
)
def test_what_orjson_reads_otherwise_is_read_by_json(raw: str) -> None:
    assert _reading(loads_entry, raw) == _reading(json.loads, raw)


def test_a_plain_flood_is_read_as_columns_and_anything_else_line_by_line() -> None:
    """The column path answers for a read of plain entries, and only for such a read."""
    plain = [_entry(i, MESSAGES[i % len(MESSAGES)], str(i % 8)) for i in range(300)]
    columns = flood_columns(plain)
    assert columns is not None
    texts, timestamps_s, cursors, priorities = columns
    assert cursors[-1] == "c299" and priorities[:3] == [0, 1, 2]
    assert timestamps_s[0] == 1_800_000_000.0 and texts[0] == MESSAGES[0].rstrip("\n")
    unusual = [
        _entry(7, [104, 105], "6"),  # a message in bytes
        _entry(7, "x", "06"),  # a PRIORITY that reads otherwise
        _entry(7, "x", 6),  # a PRIORITY as a number
        _entry(7, "x", [6]),  # as a list, or an object: no key
        _entry(7, "x", {"p": 6}),
        '{"__CURSOR": "c7", "MESSAGE": "x"}',  # no time
        '{"__CURSOR": "c7", "MESSAGE": "x", "__REALTIME_TIMESTAMP": "0"}',
        '{"__CURSOR": "cut", "MESSAGE": "no end',
        '["not", "an", "object"]',
        OVERLONG_LINE,
    ]
    for odd in unusual:
        assert flood_columns([*plain[:5], odd, *plain[5:10]]) is None, odd


def test_a_flood_with_an_entry_seen_before_drops_it_as_line_by_line() -> None:
    raws = [_entry(i, MESSAGES[i % len(MESSAGES)], "6") for i in range(50)]
    one = JournalFollower(LocalHost(), "x.service", follow=False)
    many = JournalFollower(LocalHost(), "x.service", follow=False)
    expected = _line_by_line(one, raws[:30]) + _line_by_line(one, raws[20:])
    got = many._decode_batch(raws[:30]) + many._decode_batch(raws[20:])
    assert got == expected and len(got) == 50
    assert _state(many) == _state(one)
