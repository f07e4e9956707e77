"""The stack summary names every rank once, under the frame it is in, a stopped rank apart.

Generated: any assignment of ranks to frames and waits, in any order, read back from the
summary ("ranks 0-2, 5 in all_reduce [futex_wait_queue], rank 3 in all_reduce
[do_signal_stop]") gives each rank's frame; a stopped rank is always said stopped, and a
wait shown for a group is every member's.
"""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from tui.serving.progress.stack_model import RankStacks, ThreadStack, summarise, threads_from_json

FRAMES = st.sampled_from(["all_reduce", "sleep", "recv", "busy_loop"])
WCHANS = st.sampled_from([None, "futex_wait_queue", "do_signal_stop"])
GROUP = re.compile(r"ranks? ([\d, -]+?) in (\w+)(?: \[(\w+)\])?(?:, |;|$)")


def _rank(index: int, frame: str, wchan: str | None) -> RankStacks:
    thread = ThreadStack(1000 + index, None, (f"{frame} (x.py:1)",), frame)
    return RankStacks(1000 + index, f"VLLM::Worker_TP{index}", (thread,), None, wchan)


def _numbers(spans: str) -> list[int]:
    out: list[int] = []
    for span in spans.split(", "):
        low, _, high = span.partition("-")
        out += list(range(int(low), int(high or low) + 1))
    return out


@given(st.lists(st.tuples(FRAMES, WCHANS), min_size=1, max_size=16), st.randoms())
def test_every_rank_is_named_once_under_its_frame(
    places: list[tuple[str, str | None]], random: object
) -> None:
    ranks = [_rank(i, frame, wchan) for i, (frame, wchan) in enumerate(places)]
    random.shuffle(ranks)  # type: ignore[attr-defined]
    summary = summarise(tuple(ranks))
    found: dict[int, tuple[str, str | None]] = {}
    for spans, frame, wchan in GROUP.findall(summary):
        for number in _numbers(spans):
            assert number not in found, summary
            found[number] = (frame, wchan or None)
    assert {i: frame for i, (frame, _) in found.items()} == {
        i: frame for i, (frame, _) in enumerate(places)
    }, summary
    for i, (_, wchan) in enumerate(places):
        shown = found[i][1]
        assert shown in (None, wchan), summary  # a wait shown is the rank's own
        assert (shown == "do_signal_stop") == (wchan == "do_signal_stop"), summary


def test_a_rank_caught_on_the_cpu_stays_in_its_frames_group() -> None:
    """Under load a rank in the same frame may be read running (no wchan): the group holds;
    the stopped rank stands apart."""
    ranks = [
        _rank(0, "all_reduce", "hrtimer_nanosleep"),
        _rank(1, "all_reduce", None),
        _rank(2, "all_reduce", "hrtimer_nanosleep"),
        _rank(3, "all_reduce", "do_signal_stop"),
    ]
    assert summarise(tuple(ranks)) == (
        "ranks 0-2 in all_reduce, rank 3 in all_reduce [do_signal_stop]"
    )
    assert summarise(tuple(ranks[::2])) == "ranks 0, 2 in all_reduce [hrtimer_nanosleep]"


def test_the_issue_example_and_named_processes() -> None:
    ranks = [_rank(i, "all_reduce", None) for i in range(7)] + [_rank(7, "sleep", None)]
    core = RankStacks(5, "VLLM::EngineCore", (), "gone mid-dump")
    assert summarise((*ranks, core)) == (
        "ranks 0-6 in all_reduce, rank 7 in sleep; EngineCore gone mid-dump"
    )


def test_py_spy_json_main_thread_is_the_pid() -> None:
    answer = [
        {"pid": 7, "os_thread_id": 9, "thread_name": "t", "frames": [{"name": "poll"}]},
        {
            "pid": 7,
            "os_thread_id": 7,
            "thread_name": "MainThread",
            "frames": [
                {"name": "all_reduce", "short_filename": "parallel_state.py", "line": 120},
                {"name": "execute_model", "short_filename": "worker.py", "line": 9},
            ],
        },
    ]
    threads = threads_from_json(7, json.dumps(answer))
    rank = RankStacks(7, "VLLM::Worker_TP2", threads, None)
    assert rank.main_thread is not None and rank.main_thread.innermost == "all_reduce"
    assert rank.main_thread.frames[0] == "all_reduce (parallel_state.py:120)"
    assert summarise((rank,)) == "rank 2 in all_reduce"
