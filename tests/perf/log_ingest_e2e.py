"""Log ingest end to end: a real source through the console into the drawn log pane.

Sources: a log file appended by another process (the console's local file follower),
or a journal written by systemd-journal-remote and followed by `journalctl -o json -f`.
The console is the real ServedeckApp (headless), so every stage runs as it does for
an operator: reading, JSON decoding, classification, the load tracker, the restart-loop
watch, the recorder feed (with its redaction; `--no-record` leaves it out) and the pane,
with every line drawn. Prints lines/s (writer start to the last line drawn; and from the
first line drawn to the last, with the wait for the first line apart), event-loop
lag p50/p99 (a 10 ms timer), RSS before/after, then each stage's cost per line measured
apart on the same lines.

    python tests/perf/log_ingest_e2e.py [--source file|journal] [--lines 200000] [--unit-fields]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "perf"))
sys.path.insert(0, str(REPO / "tests" / "support"))

from log_ingest import make_lines, rss_mb  # noqa: E402

# The file's writer: it reads its lines first, says "ready", and appends them in chunks once
# it reads "go", so the clock starts when the lines start coming (not at its own start).
WRITER = r"""
import sys
path, total, chunk, given = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with open(given) as source:
    lines = source.read().splitlines(keepends=True)
print("ready", flush=True)
sys.stdin.readline()
with open(path, "a") as out:
    for start in range(0, total, chunk):
        out.write("".join(lines[start:start + chunk]))
        out.flush()
"""

# The journal's writer, in a process of its own as the file's is: formatting the export
# entries in a thread of the console's process took the interpreter from its event loop.
# It opens the journal (journalctl follows a file its writer still holds), says "ready",
# and writes the flood (the lines of the file argv[3]) once it reads "go".
JOURNAL_WRITER = r"""
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from journal_fixtures import UNIT_STDOUT_FIELDS, JournalWriter
path, extra = Path(sys.argv[1]), UNIT_STDOUT_FIELDS if sys.argv[2] == "1" else ""
writer = JournalWriter(path)
writer.write("servedeck ingest: journal opened")
writer.wait_visible(1)
print("ready", flush=True)
sys.stdin.readline()
lines = Path(sys.argv[3]).read_text().splitlines()
for start in range(0, len(lines), 5000):
    writer.write(*lines[start:start + 5000], extra=extra)
writer.close()
"""


# -o json with the fields the journal source reads (what it asks for), the full -o json,
# and the cheaper modes for comparison: export (binary-safe, needs its own parser) and cat
# (the message only: no cursor to resume from, no priority)
JOURNALCTL_MODES = (
    "-o json --output-fields=MESSAGE,PRIORITY",
    "-o json",
    "-o export",
    "-o cat",
)


JOURNAL_MAX_LINES = 120_000
# A real vLLM load's log, from its start to "Application startup complete."
_LOAD_LOG = REPO / "tests" / "support" / "fixtures" / "vllm-0.32-cpu" / "server.log"
LOAD_LOG_LINES = _LOAD_LOG.read_text().splitlines()[:98]


def texts(count: int) -> list[str]:
    return [line.text for line in make_lines(0, count)]


def per_line_us(seconds: float, count: int) -> float:
    return seconds / count * 1e6


def timed(work: Callable[[], Any]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


class Counted:
    """Counts the lines the pane draws (each batch passes its _format once), and those it
    was given: a pane whose queue outgrows its buffer drops the oldest queued lines
    undrawn (they would leave the buffer at once), which the run reports."""

    def __init__(self, pane: Any) -> None:
        self.drawn = 0
        self.given = 0
        self.pane = pane
        original_add = pane.add_lines

        def adding(lines: Any) -> None:
            self.given += len(lines)
            original_add(lines)

        pane.add_lines = adding
        self.first_at: float | None = None  # perf_counter when the first line was drawn
        self.last_at = 0.0
        original = pane._format

        def counting(lines: Any) -> Any:
            if lines and self.first_at is None:
                self.first_at = time.perf_counter()
            self.drawn += len(lines)
            self.last_at = time.perf_counter()
            return original(lines)

        pane._format = counting


async def through_console(
    source: str,
    total: int,
    workdir: Path,
    record: bool,
    unit_fields: bool = False,
    stamps_now: bool = False,
    after_load: bool = False,
    written_first: bool = False,
) -> dict[str, Any]:
    """The real app following a real source while another process writes `total` lines.

    The lines' own clocks say 11-29 10:MM:SS: the recorder takes a warning that old for
    the backlog shown at start and records none of them (no redaction, no events);
    `stamps_now` stamps them in the coming hour, so every warning is recorded."""
    os.environ["SERVEDECK_DATA_DIR"] = str(workdir / "data")
    os.environ["SERVEDECK_RECORD"] = "1" if record else "0"
    from tui.app import ServedeckApp
    from tui.compose import open_deck
    from tui.core.config import Profile, ServiceConfig
    from widgets.log_pane import LogPane

    lines = texts(total)
    if after_load:
        # a real load's log first (to its "Application startup complete."): the console then
        # reads the flood as a server's that has loaded, every line past the load's start
        lines = LOAD_LOG_LINES[: total // 2] + lines[len(LOAD_LOG_LINES) :]
    if stamps_now:
        # the next hour: every minute of it is after the console's start, none is backlog
        today = time.strftime("%m-%d %H:", time.localtime(time.time() + 3600))
        lines = [text.replace("11-29 10:", today, 1) for text in lines]
    expected = total
    if source == "file":
        log_path = workdir / "service.log"
        log_path.write_text("")
        profile = Profile(name="ingest", service=ServiceConfig(log_file=str(log_path)))
        deck = open_deck(profile)
    else:
        from tui.hosts.local import LocalHost
        from tui.logs.journal import JournalFollower

        journal = workdir / "service.journal"
        journal_input = workdir / "writer-input.txt"
        journal_input.write_text("\n".join(lines) + "\n")
        support = str(REPO / "tests" / "support")
        flag = str(int(unit_fields))
        argv = [sys.executable, "-c", JOURNAL_WRITER, str(journal), flag, str(journal_input)]
        producer = subprocess.Popen(
            [*argv, support], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert producer.stdin is not None and producer.stdout is not None
        if producer.stdout.readline().strip() != "ready":
            raise SystemExit("the journal writer did not start")
        expected = total + 1
        profile = Profile(name="ingest")
        deck = open_deck(profile)
        if written_first:  # the whole journal first: journalctl is then the only writer
            producer.stdin.write("go\n")
            producer.stdin.close()
            producer.wait()

        async def journal_batches(initial_lines: int = 200, follow: bool = True) -> Any:
            if written_first:  # read from its first entry once the clock starts, then follow
                await reading.wait()
                initial_lines = expected + 10
            follower = JournalFollower(
                LocalHost(), journal_file=str(journal), initial_lines=initial_lines, follow=follow
            )
            async for batch in follower.batches():
                yield batch

        deck.read_log_batches = journal_batches  # type: ignore[method-assign]
    reading = asyncio.Event()  # a journal written first is read from when this is set
    app = ServedeckApp(profile, deck)
    lags: list[float] = []
    async with app.run_test(size=(160, 50)) as pilot:
        pane = app.query_one(LogPane)
        counted = Counted(pane)
        deadline = time.monotonic() + 60
        while app.record.recording is None and time.monotonic() < deadline:  # sources started
            await pilot.pause(0.05)
        await pilot.pause(0.5)
        counted.drawn = 0 if source == "file" else counted.drawn
        counted.given = counted.drawn
        counted.first_at = None
        rss_before = rss_mb()
        flooding = True

        async def lag_probe() -> None:
            while flooding:
                start = time.perf_counter()
                await asyncio.sleep(0.01)
                lags.append(time.perf_counter() - start - 0.01)

        if source == "file":  # its lines from a file: a pipe written from here held the loop
            writer_input = workdir / "writer-input.txt"
            writer_input.write_text("\n".join(lines) + "\n")
            argv = [sys.executable, "-c", WRITER, str(log_path), str(total), "10000"]
            producer = subprocess.Popen(
                [*argv, str(writer_input)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            assert producer.stdin is not None and producer.stdout is not None
            if (await asyncio.to_thread(producer.stdout.readline)).strip() != "ready":
                raise SystemExit("the file writer did not start")
        probe = asyncio.create_task(lag_probe())
        started = time.perf_counter()
        cpu_started = time.process_time()  # this process: the console (the writer runs apart)
        reading.set()
        if not producer.stdin.closed:
            producer.stdin.write("go\n")
            producer.stdin.close()
        deadline = time.monotonic() + 600
        while counted.drawn < expected and time.monotonic() < deadline:
            if counted.given >= expected and not pane._pending:
                break  # every line given, and the pane has nothing left to draw
            await asyncio.sleep(0.01)
        elapsed = time.perf_counter() - started
        cpu_s = time.process_time() - cpu_started
        flooding = False
        await probe
        rss_after = rss_mb()
        drawn, buffered = counted.drawn, len(pane.buffer)
        await pilot.press("q")
    producer.wait()
    lags.sort()
    return {
        "source": source,
        "lines": total,
        "lines_drawn": drawn,
        "lines_dropped_undrawn": counted.given - drawn,
        "recording": record,
        "seconds": elapsed,
        "lines_per_s": drawn / elapsed,
        # Apart: the wait for the first line (the follower's idle poll, up to 0.1 s, and the
        # pane's 0.1 s flush tick) and the pace from the first line drawn to the last, which
        # a short flood's fixed waits do not weigh on.
        "first_line_ms": ((counted.first_at or started) - started) * 1000,
        "lines_per_s_while_drawing": drawn / max(counted.last_at - (counted.first_at or 0), 1e-9),
        # less noisy than lines/s on a loaded machine: the console's own CPU for each line
        "console_cpu_us_per_line": cpu_s / max(drawn, 1) * 1e6,
        "lag_p50_ms": statistics.median(lags) * 1000 if lags else 0.0,
        "lag_p99_ms": lags[int(0.99 * (len(lags) - 1))] * 1000 if lags else 0.0,
        "lag_max_ms": lags[-1] * 1000 if lags else 0.0,
        "rss_before_mb": rss_before,
        "rss_after_mb": rss_after,
        "buffer_lines": buffered,
    }


def stage_costs(total: int, workdir: Path, source: str) -> dict[str, float]:
    """Each stage apart, µs per line, on the same vLLM-format lines."""
    from tui.app.console_log import LOG_DRAIN_LINES
    from tui.core.redact import redact_lines, redact_text
    from tui.hosts.local import LocalHost
    from tui.logs.classify import LevelClassifier
    from tui.logs.journal import JournalFollower
    from tui.logs.journal_entry import loads_entry
    from tui.logs.line import LineQueue, LogLine, texts_of, warnings_or_worse
    from tui.logs.tail import FileFollower
    from tui.record.feed import RecordFeed
    from tui.serving.load.tracker import LoadTracker, vllm_line_time_s
    from tui.serving.unit.restart_loop import RestartLoopDetector

    lines = texts(total)
    costs: dict[str, float] = {}
    classifier = LevelClassifier()
    costs["classify"] = per_line_us(timed(lambda: [classifier.classify(t) for t in lines]), total)
    chunked = [lines[start : start + 1000] for start in range(0, total, 1000)]
    costs["classify_many, chunks of 1,000"] = per_line_us(
        timed(lambda: [LevelClassifier().classify_many(chunk) for chunk in chunked]), total
    )

    async def consume(source_batches: Any) -> list[Any]:  # as the console takes them
        return [batch async for batch in source_batches]

    read_batches: list[Any] = []
    if source == "file":
        path = workdir / "stage.log"
        path.write_text("\n".join(lines) + "\n")
        follower = FileFollower(str(path), initial_lines=total, follow=False)
        seconds = timed(lambda: read_batches.extend(asyncio.run(consume(follower.batches()))))
        # a read's lines as columns (LineBatch): no LogLine is built
        costs["file read+split+classify"] = per_line_us(seconds, total)
    else:
        journal = workdir / "service.journal"
        follower_j = JournalFollower(
            LocalHost(), journal_file=str(journal), initial_lines=total, follow=False
        )
        cpu_started = time.process_time()  # this process only: journalctl runs apart
        seconds = timed(lambda: read_batches.extend(asyncio.run(consume(follower_j.batches()))))
        journal_lines = sum(map(len, read_batches))
        costs["journalctl+stream+json+classify+LogLine"] = per_line_us(seconds, journal_lines)
        costs["the same, this process's CPU"] = per_line_us(
            time.process_time() - cpu_started, journal_lines
        )
        raw_argv = ["journalctl", "--file", str(journal), "--no-pager", "--all"]
        raw = subprocess.run(
            [*raw_argv, *JOURNALCTL_MODES[0].split()], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        full = subprocess.run(
            [*raw_argv, "-o", "json"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        for mode in JOURNALCTL_MODES:  # journalctl's own cost, in its own process
            argv = ["journalctl", "--file", str(journal), "--no-pager", "--all", *mode.split()]
            costs[f"journalctl {mode} alone"] = per_line_us(
                timed(lambda argv=argv: subprocess.run(argv, capture_output=True, check=True)),
                len(raw),
            )
        reads = [raw[start : start + 1000] for start in range(0, len(raw), 1000)]
        decoding = JournalFollower(LocalHost(), journal_file=str(journal), follow=False)
        costs["journal decode+classify+LogLine, reads of 1,000"] = per_line_us(
            timed(lambda: [decoding._decode_batch(read) for read in reads]), len(raw)
        )
        costs["json.loads, the fields read"] = per_line_us(
            timed(lambda: [json.loads(r) for r in raw]), len(raw)
        )
        costs["json.loads, every field"] = per_line_us(
            timed(lambda: [json.loads(r) for r in full]), len(full)
        )
        costs["loads_entry (orjson), the fields read"] = per_line_us(
            timed(lambda: [loads_entry(r) for r in raw]), len(raw)
        )
    # the console hands the tracker and the restart watch LOG_DRAIN_LINES at a time, as the
    # batches (or parts) they were read in
    queue = LineQueue()
    for batch in read_batches:
        queue.add(batch)
    batches: list[Any] = []
    while queue:
        batches.extend(queue.take(LOG_DRAIN_LINES))
    read = [line for batch in read_batches for line in batch]
    tracker = LoadTracker()
    costs["load tracker"] = per_line_us(
        timed(lambda: [tracker.feed_many(batch) for batch in batches]), len(read)
    )
    loaded = LoadTracker()  # a server that has loaded: the steady state of a flood
    loaded.feed_many([LogLine(text, 1.8e9) for text in LOAD_LOG_LINES])
    costs["load tracker, after a load"] = per_line_us(
        timed(lambda: [loaded.feed_many(batch) for batch in batches]), len(read)
    )
    detector = RestartLoopDetector("vllm.service")
    costs["restart-loop watch"] = per_line_us(
        timed(lambda: [detector.feed(texts_of(batch)) for batch in batches]),
        len(read),
    )
    costs["recorder's own-clock parse"] = per_line_us(
        timed(lambda: [vllm_line_time_s(line.text) for line in read]), len(read)
    )
    from tui.serving.load import tracker as loadwatch

    if hasattr(loadwatch, "vllm_line_times_s"):  # the console's path: a batch's warnings
        warning_texts = [
            [line.text for line in warnings_or_worse(batch)] for batch in batches
        ]  # µs per line of the flood, as the stages above
        costs["clock parse of the warnings, batches"] = per_line_us(
            timed(lambda: [loadwatch.vllm_line_times_s(texts) for texts in warning_texts]),
            len(read),
        )
        costs["clock parse of the warnings, one by one"] = per_line_us(
            timed(lambda: [[vllm_line_time_s(t) for t in texts] for texts in warning_texts]),
            len(read),
        )
    costs["redact_text"] = per_line_us(timed(lambda: [redact_text(t) for t in lines]), total)
    text_batches = [
        lines[start : start + LOG_DRAIN_LINES] for start in range(0, total, LOG_DRAIN_LINES)
    ]
    costs["redact_lines, batches"] = per_line_us(
        timed(lambda: [redact_lines(batch) for batch in text_batches]), total
    )

    class Sink:
        def put(self, *args: Any, **kwargs: Any) -> None:
            return None

        def __getattr__(self, name: str) -> Callable[..., None]:
            return lambda *args, **kwargs: None

    feed = RecordFeed(Sink(), "local")  # type: ignore[arg-type]
    now = time.time()
    costs["recorder feed (redacts)"] = per_line_us(
        timed(lambda: [feed.observe_log(line, now) for line in read]), len(read)
    )
    entries = [
        [(line, vllm_line_time_s(line.text)) for line in batch] for batch in batches
    ]  # the console reads each line's own clock before the feed
    costs["recorder feed, batches (redacts)"] = per_line_us(
        timed(lambda: [feed.observe_logs(batch, now) for batch in entries]), len(read)
    )
    return costs


def pane_cost(total: int) -> float:
    from log_ingest import run

    result = asyncio.run(run(total, 2000, 50_000, True))
    return 1e6 / float(result["lines_per_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", choices=("file", "journal"), default="file")
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--no-record", action="store_true", help="console without the recorder")
    parser.add_argument("--stages-only", action="store_true")
    parser.add_argument(
        "--stamps-now",
        action="store_true",
        help="lines stamped in the coming hour: the recorder records every warning (redacted)",
    )
    parser.add_argument(
        "--after-load",
        action="store_true",
        help="a real load's log first: the flood is read as that of a server that has loaded",
    )
    parser.add_argument(
        "--written-first",
        action="store_true",
        help="journal: written whole before the console reads it from its first entry (a "
        "catch-up: journalctl is the only process feeding the console)",
    )
    parser.add_argument(
        "--unit-fields",
        action="store_true",
        help="journal entries carry the ~18 fields journald adds to a unit's stdout",
    )
    args = parser.parse_args()
    if args.source == "journal" and args.lines > JOURNAL_MAX_LINES:
        # systemd-journal-remote archives its file at ~64 MB and goes on in a new one, which
        # `journalctl --file` (following the first) never reads: the run would wait forever
        parser.error(f"--source journal takes at most {JOURNAL_MAX_LINES:,} lines (one file)")
    with tempfile.TemporaryDirectory(prefix="servedeck-ingest-") as tmp:
        workdir = Path(tmp)
        if not args.stages_only:
            result = asyncio.run(
                through_console(
                    args.source,
                    args.lines,
                    workdir,
                    not args.no_record,
                    args.unit_fields,
                    args.stamps_now,
                    args.after_load,
                    args.written_first,
                )
            )
            for key, value in result.items():
                shown = f"{value:,.1f}" if isinstance(value, float) else str(value)
                print(f"{key:>40}: {shown}")
        elif args.source == "journal":
            from journal_fixtures import UNIT_STDOUT_FIELDS, JournalWriter

            writer = JournalWriter(workdir / "service.journal")
            lines = texts(args.lines)
            extra = UNIT_STDOUT_FIELDS if args.unit_fields else ""
            started = time.perf_counter()
            for start in range(0, args.lines, 5000):
                writer.write(*lines[start : start + 5000], extra=extra)
            writer.close()  # journal-remote has stored every entry when it exits
            # the source of the end-to-end journal run: it bounds what that run can show
            written_us = per_line_us(time.perf_counter() - started, args.lines)
        print("\nstage costs, µs per line (each measured apart; some include others, so no sum):")
        costs = stage_costs(min(args.lines, 100_000), workdir, args.source)
        if args.source == "journal" and args.stages_only:
            costs["systemd-journal-remote writing, alone"] = written_us
        costs["log pane, every line drawn"] = pane_cost(min(args.lines, 200_000))
        for name, us in costs.items():
            print(f"{name:>40}: {us:7.2f}")


if __name__ == "__main__":
    main()
