"""The log lines that mark a model load's progress (DESIGN.md section 6), as one table.

vLLM 0.32-0.33 with older variants accepted, and SGLang. Each pattern is declared once,
with the literals one of which every match holds (`Needs`): its search tries the regex
only where a literal is, and the tracker's prefilter (prefilter.py) reads its word lists
from these declarations (STARTS, JOINS, FACTS, STATS below), never from a copy. The
tracker (tracker.py) decides what a match means for the phase.

Every pattern is linear-time on any input (a 1 MB line of digits must not stall
the console): repetitions that can meet each other are bounded, `.*` between
two literals is `.{0,N}?`, and the tracker examines at most SCAN_CHARS of a line.
tests/integration/test_pattern_linearity.py feeds 1 MB adversarial lines to every pattern;
tests/core/test_load_pattern_literals.py checks each declared literal is in every match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Needs:
    """A pattern and its literals: every match holds one of them (case-sensitive)."""

    regex: re.Pattern[str]
    literals: tuple[str, ...]

    def search(self, text: str) -> re.Match[str] | None:
        """regex.search, tried only where a literal is (a flood's line holds none)."""
        for literal in self.literals:
            if literal in text:
                return self.regex.search(text)
        return None


def _needs(pattern: str, *literals: str) -> Needs:
    return Needs(re.compile(pattern), literals)


def words(*patterns: Needs) -> tuple[str, ...]:
    """The literals of `patterns`, each once, in order."""
    return tuple(dict.fromkeys(literal for needs in patterns for literal in needs.literals))


# A number such as 2,097,152 or 0.01 or .5: bounded, so a run of digits cannot backtrack.
_NUM = r"(\d[\d,]{0,40}(?:\.\d{1,20})?|\.\d{1,20})"
SCAN_CHARS = 4096  # the most of one line (or one tqdm segment) any pattern examines

# starting
VLLM_VERSION = _needs(
    r"(?:vLLM (?:API )?server version|\u2588\s[^\u2588]{0,200}?\bversion)\s{1,8}v?([\w.+-]{1,64})"
    r"(?:, serving model (\S{1,512}))?",
    "version",
)
BANNER_MODEL = _needs(r"\u2588\s[^\u2588]{0,200}?\bmodel\s{1,8}(\S{1,512})\s{0,64}$", "\u2588")
VLLM_ENGINE_INIT = _needs(
    r"Initializing a V\d LLM engine \(v([\w.+-]{1,64})\) with config: model='([^']{1,512})'",
    "LLM engine",
)
SGLANG_START = _needs(r"server_args=ServerArgs\(model_path='([^']{1,512})'", "ServerArgs(")

# weights
WEIGHTS_START = _needs(
    r"Starting to load model (\S{1,512}?)(?:\.\.\.)?\s{0,64}$|Load weight begin",
    "Starting to load model",
    "Load weight begin",
)
SHARD_BAR = _needs(
    r"(?:Loading (?:safetensors|pt|\w{1,32}) checkpoint shards|Multi-thread loading shards)"
    r":\s{0,8}(\d{1,3})%\s{0,8}Completed\s{0,8}\|\s{0,8}(\d{1,9})/(\d{1,9})"
    r"(?:\s{0,8}\[(?P<elapsed>[\d:]{1,20})<(?P<remaining>[\d:?]{1,20}))?",
    "Completed",
)
WEIGHTS_TOOK = _needs(rf"Loading weights took {_NUM} seconds", "Loading weights took")
MODEL_LOADING_TOOK = _needs(
    rf"Model loading took {_NUM} ?GiB(?: memory)? and {_NUM} seconds", "Model loading took"
)
# vLLM before V1 (0.4-0.6): the weights' size (GiB, printed "GB"), then straight to profiling
# the memory left for the KV cache; no compile phase comes between.
OLD_WEIGHTS_TOOK = _needs(rf"Loading model weights took {_NUM} ?GB", "Loading model weights took")
SGLANG_WEIGHTS_END = _needs(rf"Load weight end\..{{0,300}}?mem usage={_NUM} GB", "Load weight end.")

# compile
_COMPILE_STARTS = (
    "Warming up model for the compilation",
    "Dynamo bytecode transform time",
    "Compiling a graph for dynamic shape",
    "Compiling model again",
    "Start compiling",
)
COMPILE_START = _needs("|".join(map(re.escape, _COMPILE_STARTS)), *_COMPILE_STARTS)
COMPILE_TOOK = _needs(
    rf"torch\.compile takes? {_NUM} ?s in total|torch\.compile took {_NUM} ?s", "torch.compile t"
)

# KV cache
KV_AVAILABLE = _needs(rf"Available KV cache memory: {_NUM} ?GiB", "Available KV cache memory: ")
KV_EXPLICIT = _needs(
    rf"Explicitly set \(?{_NUM}(?:/[\d.]+)?\)? ?GiB for KV cache", "Explicitly set "
)
KV_TOKENS = _needs(rf"(?:GPU|CPU|XPU|TPU) KV cache size: {_NUM} tokens", " KV cache size: ")
MAX_CONCURRENCY = _needs(
    rf"Maximum concurrency for {_NUM} tokens per request: {_NUM}x", "Maximum concurrency for "
)
SGLANG_KV = _needs(
    rf"Memory pool end|KV Cache is allocated\. #tokens: {_NUM}",
    "Memory pool end",
    "KV Cache is allocated. #tokens: ",
)
SGLANG_MAX_TOKENS = _needs(rf"max_total_num_tokens={_NUM}", "max_total_num_tokens=")
INIT_ENGINE_TOOK = _needs(
    rf"init engine \(profile, create kv cache, warmup model\) took {_NUM}",
    "init engine (profile, create kv cache, warmup model) took ",
)

# CUDA graphs
GRAPHS_START = _needs(
    r"Capturing CUDA graphs?|Capture (?:cuda|CUDA) graph begin",
    "Capturing CUDA graph",
    " graph begin",
)
GRAPHS_DONE = _needs(
    rf"Graph capturing finished in {_NUM} secs?(?:, took {_NUM} GiB)?|"
    rf"Capture (?:cuda|CUDA) graph end\. Time elapsed: {_NUM} s(?:\. mem usage={_NUM} GB)?",
    "Graph capturing finished in ",
    " graph end. Time elapsed: ",
)

# serving
SERVER_STARTING = _needs(
    r"Starting vLLM (?:API )?server on (\S{1,512})|Uvicorn running on (\S{1,512})",
    "Starting vLLM ",
    "Uvicorn running on ",
)
_READY = ("Application startup complete.", "The server is fired up and ready to roll!")
SERVER_READY = _needs("|".join(map(re.escape, _READY)), *_READY)
_SHUTDOWNS = (
    "[shutdown]",
    "Shutting down",
    "shutdown triggered",
    "Received SIGTERM",
    "Gracefully stopping",
)
SHUTDOWN = _needs("|".join(map(re.escape, _SHUTDOWNS)), *_SHUTDOWNS)

# runtime stats
VLLM_ENGINE_STATS = _needs(
    rf"Engine \d+: Avg prompt throughput: {_NUM} tokens/s, Avg generation throughput: "
    rf"{_NUM} tokens/s, Running: (\d{{1,9}}) reqs, (?:Swapped: \d{{1,9}} reqs, )?"
    rf"(?:Pending|Waiting): (\d{{1,9}}) reqs, (?:GPU|CPU|XPU) KV cache usage: {_NUM}%"
    rf"(?:, Prefix cache hit rate: {_NUM}%)?",
    "Avg prompt throughput: ",
)
VLLM_OLD_STATS = _needs(
    rf"Avg prompt throughput: {_NUM} tokens/s, Avg generation throughput: {_NUM} tokens/s, "
    rf"Running: (\d{{1,9}}) reqs, (?:Swapped: \d{{1,9}} reqs, )?(?:Pending|Waiting): "
    rf"(\d{{1,9}}) reqs, "
    rf"GPU KV cache usage: {_NUM}%",
    "Avg prompt throughput: ",
)
SGLANG_DECODE = _needs(
    rf"Decode batch\..{{0,200}}?#running-req: (\d{{1,9}}).{{0,200}}?token usage: {_NUM}"
    rf".{{0,200}}?gen throughput \(token/s\): {_NUM}.{{0,200}}?#queue-req: (\d{{1,9}})",
    "Decode batch.",
)

# failure
TRACEBACK = "Traceback (most recent call last):"
EXCEPTION_LINE = re.compile(
    r"(?:^|\]\s|\s)((?:[A-Za-z_]\w{0,64}\.){0,8}[A-Za-z_]\w{0,64}(?:Error|Exception)\b:?.*)$"
)
# A fatal line holds one of these (the last, "Killed", only at the end).
_FATALS = (
    "Engine core initialization failed",
    "EngineCore failed to start",
    "CUDA out of memory",
    "torch.OutOfMemoryError",
    "RuntimeError: ",
    "ValueError: ",
    "AssertionError",
    "Killed",
)
FATAL = _needs("|".join([*map(re.escape, _FATALS[:-1]), f"{_FATALS[-1]}$"]), *_FATALS)
# A line states an error level (tui.logs.classify.explicit_level) with one of these words, or
# starts as a glog error (`E1129 10:00:00`, `[F1129 ...`): each such start after a newline.
STATED_ERROR_WORDS = ("ERROR", "CRITICAL", "FATAL", "\nE", "\n[E", "\nF", "\n[F")
# `(Worker_TP3 pid=123) ERROR ...` (vLLM V1) or `[rank3]: ...` (torch.distributed)
PROCESS_PREFIX = re.compile(
    r"^\s{0,8}(?:\((?P<proc>[\w.:-]{1,64}) pid=\d{1,10}\)|\[rank(?P<rank>\d{1,6})\]:)"
)
VLLM_TIMESTAMP = re.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\s")

# The table's roles, each read by the tracker and, as words, by its prefilter.
STARTS = (VLLM_VERSION, VLLM_ENGINE_INIT, SGLANG_START)  # a new load starts
JOINS = (WEIGHTS_START, SHARD_BAR)  # a load already under way, joined outside one
# What can add a fact or move the phase during a load, in the order the tracker tries them
FACTS = (
    *STARTS[:1],
    BANNER_MODEL,
    *STARTS[1:],
    SHARD_BAR,
    WEIGHTS_START,
    MODEL_LOADING_TOOK,
    WEIGHTS_TOOK,
    OLD_WEIGHTS_TOOK,
    SGLANG_WEIGHTS_END,
    COMPILE_TOOK,
    COMPILE_START,
    KV_AVAILABLE,
    KV_EXPLICIT,
    KV_TOKENS,
    MAX_CONCURRENCY,
    SGLANG_KV,
    SGLANG_MAX_TOKENS,
    INIT_ENGINE_TOOK,
    GRAPHS_DONE,
    GRAPHS_START,
    SERVER_STARTING,
    SERVER_READY,
    SHUTDOWN,
)
STATS = (VLLM_ENGINE_STATS, VLLM_OLD_STATS, SGLANG_DECODE)
FAILURES = (FATAL,)


def message_of(text: str) -> str:
    """The message after a vLLM `(Proc pid=N) LEVEL MM-DD HH:MM:SS [file:line] ` prefix."""
    if "] " in text[:120] and VLLM_TIMESTAMP.search(text[:80]):
        return text.split("] ", 1)[1]
    return text


def reads_as_stats(message: str) -> bool:
    """The message is a stats line (the tracker's EngineStats come from it)."""
    return any(needs.search(message) for needs in STATS)


def number(text: str | None) -> float | None:
    """`2,097,152` or `0.01` to a float; None stays None."""
    if text is None:
        return None
    return float(text.replace(",", ""))


def hms_to_s(text: str | None) -> float | None:
    """tqdm's `MM:SS` or `H:MM:SS` to seconds; `?` gives None."""
    if not text or "?" in text:
        return None
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + float(part)
    return seconds
