"""Batch redaction answers exactly as line-by-line redaction (issue 18).

redact_lines searches a whole batch once and sends only the lines that could hold a
secret through redact_text; every other line must be one redact_text leaves unchanged.
Checked on the captured vLLM logs in many chunk sizes, on planted secrets in every form,
on the traps of a joined batch (a secret at a line's end, a known secret spanning a
joint, embedded newlines, non-ASCII case folding), and as a property over random text
built from the words and literals that start a redaction.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.log_samples import TRICKY_LEVEL_LINES, captured_lines
from tui.core.redact import REDACTED, redact_lines, redact_text
from tui.core.redact import lines as redact_batch
from tui.core.redact import names as redact_names
from tui.core.redact import shapes as redact_shapes
from tui.logs.classify import LevelClassifier
from tui.logs.line import LogLine
from tui.record.feed import RecordFeed
from tui.record.model import Event
from tui.serving.load.tracker import vllm_line_time_s

SECRET = "S3cr3tValue-9f8e7d"
PLANTED = [
    f"vllm serve /m --api-key {SECRET} --port 8000",
    f"vllm serve /m --api-key={SECRET}",
    f"env HF_TOKEN={SECRET} PATH=/usr/bin",
    f'AWS_SECRET_ACCESS_KEY="{SECRET}" next',
    f'{{"api_key": "{SECRET}", "other": 1}}',
    f"non-default args: {{'model': 'm', 'api_keys': ['{SECRET}', 'b'], 'tp': 8}}",
    f"{{'Authorization': 'Basic {SECRET}'}}",
    f"X-Api-Key: {SECRET}",
    f"Authorization: Bearer {SECRET}",
    f"headers: BEARER {SECRET}",
    f"config apiKey: {SECRET}",
    f"db_password={SECRET}",
    f"passwd {SECRET}",
    f"cookie={SECRET}; path=/",
    f"session: {SECRET}",
    f"private_data={SECRET}",
    f"credentials: {SECRET}",
    f"token={SECRET}",
    f"key {SECRET}",  # a weak word alone
    "the key",  # a weak word at the very end of a line
    "sk-abcdefghijklmnop1234 leaked",
    "hf_abcdefghijklmnopqrstuvwx",
    "ghp_abcdefghijklmnopqrstuvwx ghs_abcdefghijklmnopqrstuvwx",
    "github_pat_abcdefghijklmnopqrstuvwx",
    "xoxb-1234567890-abcdef",
    "AKIAABCDEFGHIJKLMNOP",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop",
    "https://user:hunter22@example.com/x",
    f"known value {SECRET} inside",
    f"multi\nline with token={SECRET}\nmore",  # a line holding newlines
    "\u212aey=kelvin-sign-value",  # KELVIN SIGN lowercases to an ASCII k
    "\u0130 session=dotted-capital-value",  # lowercases to two characters
    "caf\u00e9 api_key=accented-value",
    "tokens/s throughput keyboard monkeys",  # weak words followed by a letter: no secret
    "",
]


def line_by_line(texts: list[str], extra: tuple[str, ...] = ()) -> list[str]:
    return [redact_text(text, extra) for text in texts]


def test_batch_needles_cover_every_word_and_shape() -> None:
    """A needle redact_text tests for, not covered by a batch needle, would skip lines."""
    words = [
        *redact_names._STRONG_PREFIX,
        *redact_names._RARE_WORDS,
        "-----BEGIN",  # a PEM private key's first line
        "://",  # URL credentials
        *(n for needles, _ in redact_shapes._SHAPE_NEEDLES for n in needles),
    ]
    for word in words:
        lowered = word.lower()
        assert any(needle in lowered for needle in redact_batch._BATCH_NEEDLES) or (
            redact_batch._BATCH_GH.search(lowered)
        ), word
    assert len(redact_batch._BATCH_WEAK) == len(redact_names._WEAK_LAST)


@pytest.mark.parametrize("size", [1, 2, 7, 64, 500, 2000])
def test_captured_logs_in_chunks_answer_as_line_by_line(size: int) -> None:
    texts = [*captured_lines(), *TRICKY_LEVEL_LINES, *PLANTED, *captured_lines()]
    for extra in ((), (SECRET,), ("INFO",)):
        for start in range(0, len(texts), size):
            chunk = texts[start : start + size]
            assert redact_lines(chunk, extra) == line_by_line(chunk, extra)


def test_planted_secrets_never_survive_the_batch() -> None:
    out = redact_lines(PLANTED, (SECRET,))
    assert out == line_by_line(PLANTED, (SECRET,))
    assert not any(SECRET in text for text in out)
    assert sum(REDACTED in text for text in out) >= len(PLANTED) - 4


def test_known_secret_across_the_joint_and_with_newlines() -> None:
    """A secret found across two lines only sends both through redact_text."""
    texts = ["ends with abc", "def starts", "holds abc\ndef inside", "clean line"]
    for extra in (("abc\ndef",), ("with abc",), ("c\nd",)):
        assert redact_lines(texts, extra) == line_by_line(texts, extra)
    assert redact_lines(texts, ("abc\ndef",))[2] == f"holds {REDACTED} inside"


def test_non_ascii_lines_do_not_shift_the_others() -> None:
    """`\u0130` lowercases to two characters: scanned joined, it would move every later hit."""
    texts = ["\u0130" * 40, f"token={SECRET}", "x" * 5, "y" * 60, "\u212aey=kelvin-value"]
    out = redact_lines(texts)
    assert out == line_by_line(texts)
    assert out[1] == f"token={REDACTED}"


def test_a_generator_of_secrets_is_read_once_for_all_lines() -> None:
    texts = [f"a {SECRET}", f"b {SECRET}"]
    assert redact_lines(texts, (s for s in [SECRET])) == [f"a {REDACTED}", f"b {REDACTED}"]


def test_clean_lines_come_back_as_they_are() -> None:
    texts = captured_lines()
    out = redact_lines(texts)
    assert all(a is b for a, b in zip(out, texts, strict=True))
    assert redact_lines([]) == []


_WORDS = [
    *redact_batch._BATCH_NEEDLES,
    "key", "keys", "token", "Key", "TOKEN", "keyboard", "tokens", "api_key", "X-Api-Key",
    "Authorization", "Bearer", "Basic", "sk-", "ghp_", "ghx_", "xoxb-", "AKIA", "eyJ",
    "://", "user:pw@", "abcdefghijklmnopqrstuvwx", "0123456789ABCDEF", "S3cr3t",
]  # fmt: skip
_fragments = st.sampled_from(_WORDS) | st.text(
    alphabet=" =:\"'-_[]{},;\n\t/@.\u212a\u0130\u00e9abkKyY0", max_size=6
)
_texts = st.lists(_fragments, max_size=12).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_texts, max_size=20),
    st.lists(st.sampled_from(["S3cr3t", "key=S3", "\nS3", "abcdefghij", "\u212aey1"]), max_size=2),
)
def test_property_batch_equals_line_by_line(texts: list[str], extra: list[str]) -> None:
    assert redact_lines(texts, tuple(extra)) == line_by_line(texts, tuple(extra))


class _Events:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def add_event(self, event: Event) -> None:
        self.events.append(event)


def test_recorder_batch_records_as_line_by_line() -> None:
    """RecordFeed.observe_logs (the console's path) gives the events observe_log gives."""
    lines = [
        LogLine(text, 1.8e9 + index, level=LevelClassifier().classify(text))
        for index, text in enumerate([*TRICKY_LEVEL_LINES, *PLANTED, *captured_lines()[:300]])
    ]
    lines += [LogLine(f"WARNING api_key={SECRET}", None, cursor="s=1", level="WARNING")]
    one, batch = _Events(), _Events()
    single = RecordFeed(one, "box", extra_secrets=(SECRET,))  # type: ignore[arg-type]
    for line in lines:
        single.observe_log(line, 5.0)
    entries = [(line, vllm_line_time_s(line.text)) for line in lines]
    RecordFeed(batch, "box", extra_secrets=(SECRET,)).observe_logs(entries, 5.0)  # type: ignore[arg-type]
    assert batch.events == one.events
    assert len(one.events) > 10
    assert not any(SECRET in event.text for event in one.events)
