"""Hostile kernel lines (issue 36): a 5,000-digit XID or pid, a 2 MB detail. Each decodes
to an event whose unreadable numbers are unknown and whose detail is cut, saying so;
no line makes the decoder raise."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.health.xid.decode import MAX_DETAIL_CHARS, MAX_TEXT_CHARS, decode_xid

BUSES = {"0000:41:00.0": 2}
HEAD = "NVRM: Xid (PCI:0000:41:00): "


def test_a_5000_digit_xid_is_an_unreadable_xid_not_a_traceback() -> None:
    event = decode_xid(HEAD + "7" * 5000 + ", pid=4181, name=python3, GPU has fallen off", BUSES)
    assert event is not None
    assert event.xid is None and event.number_text == "?"
    assert event.name == "unreadable XID (5000-digit number)"
    assert event.gpu_index == 2 and event.pid == 4181
    assert event.as_dict()["xid"] is None


def test_a_5000_digit_pid_is_an_unknown_pid() -> None:
    event = decode_xid(HEAD + "79, pid=" + "9" * 5000 + ", name=python3, GPU has fallen off", BUSES)
    assert event is not None
    assert (event.xid, event.pid, event.process_name) == (79, None, "python3")
    assert event.detail == "GPU has fallen off"


def test_a_2_mb_detail_is_cut_with_the_size_it_lost() -> None:
    detail = "x" * 2_000_000
    event = decode_xid(HEAD + "13, pid=1, name=python3, " + detail, BUSES)
    assert event is not None
    cut = len(detail) - MAX_DETAIL_CHARS
    assert event.detail == "x" * MAX_DETAIL_CHARS + f"… ({cut:,} characters cut)"
    assert len(event.text) < MAX_TEXT_CHARS + 40 and event.text.endswith("characters cut)")


_NUMBER = st.one_of(
    st.integers(min_value=0, max_value=10**6).map(str),
    st.integers(min_value=4000, max_value=6000).map(lambda n: "9" * n),
    st.text(alphabet="0123456789\u0663\u00b2\u2167", min_size=1, max_size=50),
)
_WORD = st.text(max_size=40)


@settings(max_examples=200, deadline=None)
@given(
    xid=_NUMBER,
    pid=st.one_of(_NUMBER, _WORD),
    name=_WORD,
    detail=st.one_of(_WORD, st.integers(0, 3_000_000).map(lambda n: "d" * n)),
    prefix=st.sampled_from(["", "[ 1234.5678] ", "kernel: "]),
)
def test_any_xid_line_decodes_without_raising(
    xid: str, pid: str, name: str, detail: str, prefix: str
) -> None:
    line = f"{prefix}{HEAD}{xid}, pid={pid}, name={name}, {detail}"
    event = decode_xid(line, BUSES)
    if event is None:
        return
    assert len(event.detail) <= MAX_DETAIL_CHARS + 40
    assert len(event.text) <= MAX_TEXT_CHARS + 40
    assert event.xid is None or event.xid < 10**6
    assert event.pid is None or event.pid < 10**10
    event.as_dict()
