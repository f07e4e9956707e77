"""The log-ingest fast paths answer exactly as the full scans they skip (issue 18).

Each fast path skips work a flood line cannot need: the restart-loop watch's four
searches, the redaction scans, mktime for a minute already seen, the log pane's per-line
reactive reads. Each is checked here against the full computation, on the captured vLLM
logs and on generated text built from the pieces that matter (secret words in every case,
case-folding traps such as the Kelvin sign and the long s, non-ASCII letters).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.log_samples import TRICKY_LEVEL_LINES, captured_lines
from tui.core.redact import redact_text
from tui.core.redact.shapes import _SHAPES, _URL_CREDENTIALS, _url_credentials
from tui.core.redact.text import _redact_pem
from tui.core.redact.values import _redact_named_values
from tui.logs.classify import (
    _ERROR_WORDS,
    _EXCEPTION_LINE,
    _PY_WARNING,
    _PY_WARNING_LINE,
    _TRACEBACK,
    _VLLM_LEVEL,
    LevelClassifier,
    explicit_level,
    priority_level,
    strip_ansi,
)
from tui.logs.line import Level
from tui.serving.load.tracker import vllm_line_time_s
from tui.serving.unit import restart_loop

PROPERTY = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def full_redaction(text: str) -> str:
    """redact_text with every scan run (no known secrets), in its order."""
    text = _redact_pem(text)
    text = _URL_CREDENTIALS.sub(_url_credentials, text)
    text = _redact_named_values(text)
    for pattern, replacement in _SHAPES:
        text = pattern.sub(replacement, text)
    return text


def full_cause(text: str) -> str | None:
    for cause, pattern in restart_loop.CAUSES:
        if pattern.search(text):
            return cause
    return None


REDACTION_PIECES = [
    "key", "Key", "KEY", "keys", "Keys", "apikey", "token", "Token", "TOKEN", "tokens", "api",
    "session", "Password", "auth", "secret", "cookie", "private", "credentials", "max", "_",
    "-", "--", ".", "=", ": ", ":", " ", "\t", '"', "'", "[", "]", "{", "}", "sk-", "hf_",
    "ghp_", "github_pat_", "xoxb-", "AKIA", "eyJ", "://", "@", "bearer ", "Basic ", "abc",
    "ABCDEFGHIJKLMNOP", "0123456789abcdefghijKLMNOP", "Value", "s", "1", "\u212a", "\u017f",
    "\u0130", "é", "K", "ey", "to", "ken", "/s", ",",
]  # fmt: skip
CAUSE_PIECES = [
    "address already in use", "ADDRESS Already In Use", "address already", " in use",
    "Free memory on device", "free memory on device", "CUDA out of memory", "out of memory",
    "OutOfMemoryError", "outofmemoryerror", "CUDA error: ", "insufficient ", "Insufficient",
    "KV cache", "kv CACHE", "No available memory for the cache blocks", "cache blocks",
    "stored in KV cache", "KV cache is needed, which is larger than the available KV cache memory",
    " is less than desired GPU memory utilization", "larger than the maximum number of tokens ",
    "that can be stored in KV cache", "x", " ", "\u212a", "\u017f", "\u0130", "é", "K", "s",
]  # fmt: skip


def pieces(alphabet: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(alphabet), max_size=14).map("".join)


def test_captured_logs_redact_and_classify_as_the_full_scans() -> None:
    for line in captured_lines():
        assert redact_text(line) == full_redaction(line), line
        assert restart_loop.cause_of(line) == full_cause(line), line


@PROPERTY
@given(pieces(REDACTION_PIECES))
def test_redaction_skips_only_scans_that_cannot_match(text: str) -> None:
    assert redact_text(text) == full_redaction(text)


def test_redaction_still_finds_secrets_next_to_the_gates_edges() -> None:
    assert redact_text("HF_TOKEN=abcdef123456") == "HF_TOKEN=[REDACTED]"
    assert redact_text("x --api-keys s3cr3tvalue") == "x --api-keys [REDACTED]"
    assert redact_text("apiKey: 'abcdef'") == "apiKey: '[REDACTED]'"
    assert redact_text("max_tokens=512 tokens/s 12.5") == "max_tokens=512 tokens/s 12.5"
    kelvin = "api_to\u212aen=abcdefgh"  # not a secret name: the Kelvin sign is no ASCII k
    assert redact_text(kelvin) == full_redaction(kelvin)


@PROPERTY
@given(pieces(CAUSE_PIECES))
def test_restart_loop_prefilter_keeps_every_cause(text: str) -> None:
    assert restart_loop.cause_of(text) == full_cause(text)


class FullClassifier(LevelClassifier):
    """The classifier as it read a line before the single match: the level, then the body
    by a second pass of the prefix pattern (the rest is LevelClassifier's own code)."""

    def classify(self, text: str, priority: int | None = None) -> str:
        plain = strip_ansi(text)
        stated = explicit_level(plain)
        body = _VLLM_LEVEL.sub("", plain).lstrip() if stated else plain
        if _TRACEBACK in plain:
            self._in_traceback = True
            return Level.ERROR
        if self._in_traceback:
            if body.startswith((" ", "\t", "^", "~")) or not body or body.startswith("During "):
                return Level.ERROR
            if _EXCEPTION_LINE.match(body):
                return Level.ERROR
            if body.startswith(("The above exception", "[rank")):
                return Level.ERROR
            self._in_traceback = False
        if stated:
            return stated
        if _PY_WARNING_LINE.match(body):
            return Level.WARNING
        if _EXCEPTION_LINE.match(body) or _ERROR_WORDS.search(body):
            return Level.ERROR
        if _PY_WARNING.search(body):
            return Level.WARNING
        return priority_level(priority) or Level.INFO


def test_classifier_reads_the_same_levels_from_captured_and_tricky_lines() -> None:
    lines = [*captured_lines(), *TRICKY_LEVEL_LINES]
    fast, full = LevelClassifier(), FullClassifier()
    for text in lines:
        assert fast.classify(text, 4) == full.classify(text, 4), text


@pytest.fixture
def berlin_time(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_line_times_match_mktime_across_dst_and_bad_fields(berlin_time: None) -> None:
    stamps = [
        (3, 29, 1, 59), (3, 29, 2, 0), (3, 29, 2, 30), (3, 29, 3, 0),
        (10, 25, 1, 59), (10, 25, 2, 0), (10, 25, 2, 30), (10, 25, 3, 0),
        (11, 29, 10, 0), (12, 31, 23, 59), (2, 29, 12, 0), (13, 45, 99, 99), (0, 0, 0, 0),
    ]  # fmt: skip
    for year in (2026, 2028):
        for month, day, hour, minute in stamps:
            for second in (0, 1, 30, 59, 60, 61, 99):
                text = f"(APIServer pid=1) INFO {month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d} x"
                try:
                    expected: float | None = time.mktime(
                        (year, month, day, hour, minute, second, 0, 0, -1)
                    )
                except (OverflowError, ValueError):
                    expected = None
                assert vllm_line_time_s(text, year) == expected, text


def test_line_times_follow_a_time_zone_change(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "(APIServer pid=1) INFO 06-01 12:00:05 [x.py:1] hello"
    try:
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()
        utc = vllm_line_time_s(text, 2026)
        monkeypatch.setenv("TZ", "Asia/Tokyo")
        time.tzset()
        tokyo = vllm_line_time_s(text, 2026)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert utc is not None and tokyo is not None and utc - tokyo == 9 * 3600
