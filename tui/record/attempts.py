"""From the timeline: the summary's incidents and its "Deployment attempts" table.

An attempt starts where a load starts (a loading phase after none, a stop, a
failure or serving) and lasts until the next one. Its configuration is the argv
and environment recorded for the service's new main pid, diffed against the
attempt before; its outcome, phase times and best benchmark come from the events
inside it. Nothing here is typed by hand: it is what the recorder saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tui.bench.best import BenchFigure, best_figures, figure_from_dict
from tui.record.model import Event
from tui.serving.load.tracker import LOADING_ORDER

LOADING = {str(phase) for phase in LOADING_ORDER[:-1]}
# flag -> the column it fills; the first spelling is the one shown
FLAGS: dict[str, tuple[str, ...]] = {
    "model": ("--model", "--model-path"),
    "TP": ("--tensor-parallel-size", "-tp", "--tp", "--tp-size"),
    "PP": ("--pipeline-parallel-size", "-pp", "--pp", "--pp-size"),
    "DP": ("--data-parallel-size", "-dp", "--dp-size"),
    "EP": ("--enable-expert-parallel", "--ep-size", "--expert-parallel-size"),
    "quantization": ("--quantization", "-q"),
    "max_model_len": ("--max-model-len", "--context-length"),
    "gpu_memory_utilization": ("--gpu-memory-utilization", "--mem-fraction-static"),
    # what `servedeck tune` varies between its starts: each attempt must say which it was
    "max_num_seqs": ("--max-num-seqs",),
    "max_num_batched_tokens": ("--max-num-batched-tokens",),
    "kv_cache_dtype": ("--kv-cache-dtype",),
    "prefix_caching": ("--enable-prefix-caching",),
    "chunked_prefill": ("--enable-chunked-prefill",),
}
BOOLEAN_FLAGS = frozenset(
    ("--enable-expert-parallel", "--enable-prefix-caching", "--enable-chunked-prefill")
)
INCIDENT_PREFIXES = (
    "load failed",
    "readiness lost",
    "unreachable",
    "connection to",
    "GPUs unavailable",
    "leftover appeared",
)


def config_of(argv: Sequence[str], env: dict[str, str] | None = None) -> dict[str, str]:
    """The deployment-relevant settings of a command line (`vllm serve M --tp 8 ...`)."""
    found: dict[str, str] = {}
    words = list(argv)
    if "serve" in words:
        index = words.index("serve")
        if index + 1 < len(words) and not words[index + 1].startswith("-"):
            found["model"] = words[index + 1]
    for i, word in enumerate(words):
        name, eq, inline = word.partition("=")
        # vLLM's `--no-enable-prefix-caching` (what the tune writes for false) turns it off
        off = name.startswith("--no-") and f"--{name[5:]}" in BOOLEAN_FLAGS
        flag = f"--{name[5:]}" if off else name
        for column, spellings in FLAGS.items():
            if flag not in spellings:
                continue
            if flag in BOOLEAN_FLAGS:
                found[column] = "off" if off else "on"
            elif eq:
                found[column] = inline
            elif i + 1 < len(words):
                found[column] = words[i + 1]
    for name, value in (env or {}).items():
        found[f"env {name}"] = value
    return found


def diff_config(previous: dict[str, str] | None, current: dict[str, str]) -> str:
    """`TP=8, model=M` for the first attempt; `TP 8 -> 4` for what changed after."""
    if previous is None:
        return ", ".join(f"{key}={value}" for key, value in current.items()) or "(not recorded)"
    changes = []
    for key in sorted(set(previous) | set(current), key=lambda k: (k.startswith("env"), k)):
        before, after = previous.get(key), current.get(key)
        if before != after:
            changes.append(f"{key} {before or '-'} -> {after or '-'}")
    return "; ".join(changes) or "same as before"


@dataclass
class Attempt:
    started_s: float
    model: str | None = None
    config: dict[str, str] = field(default_factory=dict)
    config_text: str = ""
    outcome: str = "in progress"
    phase_times: list[tuple[str, float]] = field(default_factory=list)
    served_after_s: float | None = None
    figures: list[BenchFigure] = field(default_factory=list)  # every run inside the attempt
    capacity: str | None = None  # the last finished capacity search's line

    @property
    def benchmarks(self) -> list[BenchFigure]:
        """The best complete run per workload (tui.bench.best decides), newest first."""
        return best_figures(self.figures)

    @property
    def best_tok_s(self) -> float | None:
        decode = [figure.tok_s for figure in self.benchmarks if figure.kind == "decode"]
        return max((tok_s for tok_s in decode if tok_s is not None), default=None)

    @property
    def single_stream_tok_s(self) -> float | None:
        singles = [figure.single_stream_tok_s for figure in self.benchmarks]
        return max((value for value in singles if value is not None), default=None)


def _starts_load(event: Event) -> bool:
    if event.source != "load" or not event.text.startswith("load phase: "):
        return False
    phase, previous = event.data.get("phase"), event.data.get("previous")
    return phase in LOADING and previous not in LOADING


def _ends_load(event: Event) -> bool:
    return event.source == "load" and (
        event.text == "load phase: stopped" or event.text.startswith("load failed: ")
    )


def deployment_attempts(events: Sequence[Event]) -> list[Attempt]:
    starts = [i for i, event in enumerate(events) if _starts_load(event)]
    attempts: list[Attempt] = []
    previous_config: dict[str, str] | None = None
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(events)
        begin_s = events[start].ts_s
        attempt = Attempt(begin_s, model=events[start].data.get("model"))
        # the exec of this start: the last one recorded before the load's first line (or
        # seconds after it: log clocks are coarse), never one after this load ended, which
        # is the next start's (a start that dies at once is followed within seconds)
        lower = starts[n - 1] if n else 0
        own = next((i for i in range(start + 1, end) if _ends_load(events[i])), end)
        execs = [e for e in events[lower:own] if e.source == "exec" and e.ts_s <= begin_s + 5]
        if execs:
            data = execs[-1].data
            attempt.config = config_of(data.get("argv") or (), data.get("env") or {})
        elif attempt.model:
            attempt.config = {"model": attempt.model}
        attempt.config_text = diff_config(previous_config, attempt.config)
        previous_config = attempt.config
        for event in events[start:end]:
            if event.source == "load" and event.data.get("timeline"):
                attempt.phase_times = [
                    (span["phase"], float(span["duration_s"]))
                    for span in event.data["timeline"]
                    if span.get("phase") in LOADING
                ]
            if attempt.outcome == "in progress":
                if event.text.startswith("load failed: "):
                    phase = event.data.get("phase", "?")
                    attempt.outcome = (
                        f"failed at {phase}: {event.data.get('failure_line', event.text)}"
                    )
                elif event.source == "readiness" and event.data.get("ready"):
                    attempt.outcome = "served"
                    attempt.served_after_s = event.ts_s - begin_s
                elif event.text == "load phase: stopped":
                    attempt.outcome = "stopped before serving"
            if event.source == "bench":
                figure = figure_from_dict(event.data, partial="(partial)" in event.text)
                if figure is not None:
                    attempt.figures.append(figure)
            elif event.source == "capacity" and event.data.get("finished"):
                attempt.capacity = str(event.data.get("line") or event.data.get("answer"))
        attempts.append(attempt)
    return attempts


def recorded_incidents(events: Sequence[Event], limit: int = 30) -> list[Event]:
    """The events an incident list wants: alerts firing, failures, losses, leftovers, actions."""
    chosen = [
        event
        for event in events
        if (event.kind == "alert" and event.data.get("state") == "firing")
        or event.text.startswith(INCIDENT_PREFIXES)
        or (event.source == "unit" and (": failed (" in event.text))
        or (event.kind == "gpu" and "fell off the bus" in event.text)
    ]
    return chosen[-limit:]
