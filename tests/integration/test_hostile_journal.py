"""Malformed journal entries: shown as a counted warning, the follower keeps its cursor
and goes on (issue 16). Real journalctl where it can produce the input; a stand-in
`journalctl` script (a real process printing canned JSON) for shapes journald never
writes but a broken or hostile stream can carry.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.journal_fixtures import JournalWriter
from tui.hosts.local import LocalHost
from tui.logs.classify import LevelClassifier
from tui.logs.journal import JournalFollower, read_journal
from tui.logs.journal_entry import decode_message, entry_to_line
from tui.logs.line import Level


def _entry(cursor: str, message: object, **fields: object) -> str:
    return json.dumps({"__CURSOR": cursor, "MESSAGE": message, **fields})


def _fake_journalctl(tmp_path: Path, lines: list[str]) -> dict[str, str]:
    """A `journalctl` on PATH that prints these lines (journald never writes such entries)."""
    data = tmp_path / "entries.jsonl"
    data.write_text("\n".join(lines) + "\n")
    script = tmp_path / "bin" / "journalctl"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\nexec cat {data}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{script.parent}:{os.environ['PATH']}"}


BAD_ENTRIES = [
    _entry("c1", "first good line"),
    _entry("c2", [104, "x", None, 105, 3.5, -1, 999, True]),  # mixed types and nulls
    _entry("c3", "absurd time", __REALTIME_TIMESTAMP="99999999999999999999999999"),
    _entry("c4", "negative time", __REALTIME_TIMESTAMP="-5"),
    '{"__CURSOR": "c5", "MESSAGE": ' + "[" * 50_000 + "]" * 50_000 + "}",  # deep JSON
    _entry("c6", {"nested": "object"}),
    _entry("c7", [[104, None], "y", [[1]]]),
    _entry("c8", "bad priority", PRIORITY="high"),
    '["not", "an", "object"]',
    _entry("c9", "last good line"),
]


async def test_malformed_entries_never_end_the_follower(tmp_path: Path, monkeypatch) -> None:
    for key, value in _fake_journalctl(tmp_path, BAD_ENTRIES).items():
        monkeypatch.setenv(key, value)
    follower = JournalFollower(LocalHost(), "vllm.service", follow=False)
    lines = [line async for line in follower.lines()]
    texts = [line.text for line in lines]
    assert texts[0] == "first good line"
    assert texts[-1] == "last good line"
    assert follower.last_cursor == "c9"
    assert follower.skipped_entries == 1  # the deep JSON (a non-object line is not an entry)
    warnings = [line for line in lines if line.text.startswith("servedeck: journal entry skipped")]
    assert len(warnings) == 1 and warnings[0].level == Level.WARNING
    assert "nested too deeply" in warnings[0].text and "1 skipped so far" in warnings[0].text
    assert len(lines) == 9
    assert all(line.timestamp_s is None or 0 < line.timestamp_s < 3e11 for line in lines)
    assert "h\ufffd\ufffdi" in texts[1]


async def test_an_entry_over_4_mib_is_skipped_with_a_warning(
    journal_writer: JournalWriter,
) -> None:
    """Real journald and journalctl: a 5 MiB MESSAGE gives a JSON line over the stream limit."""
    journal_writer.write("before the big one", "x" * (5 * 1024 * 1024), "after the big one")
    journal_writer.wait_visible(3, timeout_s=60)
    follower = JournalFollower(
        LocalHost(), journal_file=str(journal_writer.path), initial_lines=10, follow=False
    )
    lines = [line async for line in follower.lines()]
    texts = [line.text for line in lines]
    assert texts[0] == "before the big one"
    assert texts[-1] == "after the big one"
    assert follower.skipped_entries == 1
    assert "over 4 MiB" in texts[1]
    assert follower.last_cursor == lines[-1].cursor


async def test_read_journal_survives_a_byte_array_message(journal_writer: JournalWriter) -> None:
    journal_writer.write(b"\x00\x01 binary \xfe\xff", "next")
    journal_writer.wait_visible(2)
    lines = await read_journal(LocalHost(), journal_file=str(journal_writer.path), lines=10)
    assert [line.text for line in lines][-1] == "next"


# ---- fuzzing -----------------------------------------------------------------
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=25,
)
_entries = st.fixed_dictionaries(
    {},
    optional={
        "__CURSOR": _json,
        "MESSAGE": _json,
        "__REALTIME_TIMESTAMP": _json | st.integers().map(str),
        "PRIORITY": _json | st.integers(-5, 20).map(str),
    },
)
FUZZ = settings(max_examples=300, deadline=500, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(_json)
def test_decode_message_takes_any_json(value: object) -> None:
    assert isinstance(decode_message(value), str)


@FUZZ
@given(_entries)
def test_entry_to_line_takes_any_entry(entry: dict[str, object]) -> None:
    line = entry_to_line(entry, LevelClassifier(), "journal:x")
    assert isinstance(line.text, str)
    assert line.timestamp_s is None or 0 < line.timestamp_s < 3e11
    assert line.priority is None or 0 <= line.priority <= 7


@FUZZ
@given(st.lists(st.one_of(_entries.map(json.dumps), st.text(max_size=40)), max_size=8))
def test_follower_decode_never_raises(raws: list[str]) -> None:
    follower = JournalFollower(LocalHost(), "x.service", follow=False)
    for raw in raws:
        line = follower._decode(raw)
        assert line is None or isinstance(line.text, str)


@pytest.mark.parametrize("depth", [10, 5000, 200_000])
def test_deep_json_entry_is_a_counted_warning(depth: int) -> None:
    follower = JournalFollower(LocalHost(), "x.service", follow=False)
    raw = '{"__CURSOR": "deep", "MESSAGE": ' + "[" * depth + "]" * depth + "}"
    line = follower._decode(raw)
    assert line is not None
    if depth > 1000:
        assert line.level == Level.WARNING and follower.skipped_entries == 1
        assert follower.last_cursor == "deep"


async def test_a_log_file_line_over_4_mib_is_cut_not_buffered(tmp_path: Path) -> None:
    """The file follower (the log_file source) cuts a huge line and goes on."""
    from tui.logs.tail import FileFollower

    path = tmp_path / "vllm.log"
    path.write_bytes(b"first\n" + b"7" * (9 * 1024 * 1024) + b"\nlast\n")
    follower = FileFollower(str(path), initial_lines=10, follow=False)
    texts = [line.text async for line in follower.lines()]
    assert texts[0] == "first" and texts[-1] == "last"
    assert len(texts) == 3 and texts[1].endswith("[servedeck: line over 4 MiB cut here]")
    assert len(texts[1]) < 100_000


async def test_a_cut_json_line_inside_a_stream_is_a_counted_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SSH hands a line longer than its window over in pieces: the first is cut JSON."""
    lines = [
        _entry("c1", "one"),
        '{"__CURSOR": "c2", "MESSAGE": "cut',
        'tail of it"}',
        _entry("c3", "three"),
    ]
    for key, value in _fake_journalctl(tmp_path, lines).items():
        monkeypatch.setenv(key, value)
    follower = JournalFollower(LocalHost(), "vllm.service", follow=False)
    texts = [line.text async for line in follower.lines()]
    assert texts[0] == "one" and texts[-1] == "three"
    assert follower.skipped_entries == 1 and "not whole JSON" in texts[1]
    assert follower.last_cursor == "c3"
