"""The engine's stacks at one moment: frozen, no I/O; the per-rank summary and the saved text.

py-spy's `dump --json` is read here; the summary names the innermost Python frame of each
rank's main thread, ranks grouped by that frame ("ranks 0-6 in all_reduce, rank 7 in sleep"),
because the frame a rank is stuck in is what tells a collective from a lock from a sleep.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

_RANK_INDEX = re.compile(r"(\d+)$")


@dataclass(frozen=True, slots=True)
class ThreadStack:
    """One thread's Python frames, innermost first ("all_reduce (parallel_state.py:120)")."""

    thread_id: int
    name: str | None
    frames: tuple[str, ...]
    innermost: str | None  # the innermost frame's function name


@dataclass(frozen=True, slots=True)
class RankStacks:
    """One engine process: its Python threads (py-spy), its wchan and kernel stack (/proc)."""

    pid: int
    name: str
    threads: tuple[ThreadStack, ...]
    error: str | None  # why there are no Python stacks: gone, refused, timed out, no py-spy
    wchan: str | None = None
    kernel_stack: tuple[str, ...] | None = None  # None: not readable (root only)
    kernel_note: str | None = None

    @property
    def main_thread(self) -> ThreadStack | None:
        """The thread whose id is the pid (Linux's main thread), else the first."""
        for thread in self.threads:
            if thread.thread_id == self.pid:
                return thread
        return self.threads[0] if self.threads else None

    @property
    def label(self) -> str:
        """ "rank 3" for a titled worker (VLLM::Worker_TP3), else its short name."""
        short = self.name.removeprefix("VLLM::").removeprefix("sglang::")
        match = _RANK_INDEX.search(short)
        if match and "worker" in short.lower():
            return f"rank {int(match.group(1))}"
        return short or f"pid {self.pid}"


@dataclass(frozen=True, slots=True)
class StackDump:
    host_label: str
    at_s: float
    ranks: tuple[RankStacks, ...]
    note: str | None = None  # one line for the whole dump (py-spy missing: how to install)

    def summary(self) -> str:
        """One line: where each rank's main thread is, grouped by frame."""
        return summarise(self.ranks) or (self.note or "no engine process found")


def threads_from_json(pid: int, text: str) -> tuple[ThreadStack, ...]:
    """py-spy `dump --json`'s answer for one process; a thread of another pid is skipped."""
    data: Any = json.loads(text)
    threads = []
    for raw in data if isinstance(data, list) else ():
        if not isinstance(raw, dict) or raw.get("pid") not in (None, pid):
            continue
        frames = []
        names = []
        for frame in raw.get("frames") or ():
            if not isinstance(frame, dict):
                continue
            name = str(frame.get("name") or "?")
            where = frame.get("short_filename") or frame.get("filename") or "?"
            frames.append(f"{name} ({where}:{frame.get('line', '?')})")
            # py-spy 0.4.3 qualifies a method (`Popen._try_wait`), 0.4.2 does not: the summary
            # groups ranks by the bare function name either way.
            names.append(name.rsplit(".", 1)[-1])
        tid = raw.get("os_thread_id") or raw.get("thread_id") or 0
        threads.append(
            ThreadStack(
                thread_id=int(tid),
                name=raw.get("thread_name") if isinstance(raw.get("thread_name"), str) else None,
                frames=tuple(frames),
                innermost=names[0] if names else None,
            )
        )
    return tuple(threads)


# A stopped or traced rank is the evidence a summary exists for: it is never grouped with
# ranks in the same frame that merely wait (or run: a rank on the CPU has no wchan).
STOP_WCHANS = frozenset({"do_signal_stop", "ptrace_stop"})


def _wchan(rank: RankStacks) -> str | None:
    return rank.wchan if rank.wchan and rank.wchan != "0" else None


def _frame(rank: RankStacks) -> str:
    if rank.error:
        return rank.error
    main = rank.main_thread
    if main is None or main.innermost is None:
        return "no Python frame"
    return f"in {main.innermost}"


def _where(rank: RankStacks) -> str:
    # The kernel's wait tells a rank stopped (do_signal_stop) from one asleep in the same frame.
    wchan = _wchan(rank)
    where = _frame(rank)
    return where if rank.error or wchan is None else f"{where} [{wchan}]"


def _spans(numbers: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2, 5"."""
    spans: list[str] = []
    start = prev = numbers[0]
    for number in numbers[1:]:
        if number != prev + 1:
            spans.append(str(start) if start == prev else f"{start}-{prev}")
            start = number
        prev = number
    spans.append(str(start) if start == prev else f"{start}-{prev}")
    return ", ".join(spans)


def summarise(ranks: tuple[RankStacks, ...]) -> str:
    """Where each rank's main thread is: its innermost frame, ranks grouped by it, and the
    wchan the group shares: "ranks 0-6 in all_reduce [futex_wait], rank 7 in all_reduce
    [do_signal_stop]; EngineCore ...". A rank stopped is a group of its own; ranks in one
    frame whose waits differ (one caught on the CPU, one in a timed sleep) stay one group,
    each one's wchan in the saved dump."""
    numbered: dict[tuple[str, str | None], list[RankStacks]] = {}
    named: list[str] = []
    for rank in ranks:
        label = rank.label
        if label.startswith("rank "):
            wchan = _wchan(rank)
            stop = wchan if wchan in STOP_WCHANS and not rank.error else None
            numbered.setdefault((_frame(rank), stop), []).append(rank)
        else:
            named.append(f"{label} {_where(rank)}")
    groups = []
    for (frame, _), members in numbered.items():
        numbers = sorted(int(rank.label.split()[1]) for rank in members)
        waits = {_wchan(rank) for rank in members}
        shared = waits.pop() if len(waits) == 1 else None
        where = frame if shared is None or members[0].error else f"{frame} [{shared}]"
        noun = "rank" if len(numbers) == 1 else "ranks"
        groups.append((numbers[0], f"{noun} {_spans(numbers)} {where}"))
    parts = [", ".join(text for _, text in sorted(groups))] if groups else []
    return "; ".join(parts + named)


def dump_text(dump: StackDump) -> str:
    """The saved file: the summary first, then each process's threads and kernel stack."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(dump.at_s))
    out = [
        f"engine stacks on {dump.host_label} at {stamp}",
        "(py-spy dump --nonblocking: read from memory, the engine never paused or signalled)",
        f"summary: {dump.summary()}",
    ]
    if dump.note:
        out.append(f"note: {dump.note}")
    for rank in dump.ranks:
        title = rank.label if rank.label == rank.name else f"{rank.label}: {rank.name}"
        out += ["", f"== {title} (pid {rank.pid})"]
        if rank.error:
            out.append(f"python: {rank.error}")
        for thread in rank.threads:
            main = " (main)" if thread is rank.main_thread else ""
            title = f" {thread.name}" if thread.name else ""
            out.append(f"thread {thread.thread_id}{title}{main}")
            out += [f"    {frame}" for frame in thread.frames] or ["    (no Python frame)"]
        out.append(f"wchan: {rank.wchan or 'unknown'}")
        if rank.kernel_stack is not None:
            out.append("kernel stack:")
            out += [f"    {line}" for line in rank.kernel_stack]
        else:
            out.append(f"kernel stack: {rank.kernel_note or 'unknown'}")
    return "\n".join(out) + "\n"
