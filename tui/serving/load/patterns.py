"""The log lines that mark a model load's progress (DESIGN.md section 6).

vLLM 0.32-0.33 with older variants accepted, and SGLang. Each pattern is a
compiled regex; the tracker (tracker.py) decides what a match means for the phase.

Every pattern is linear-time on any input (a 1 MB line of digits must not stall
the console): repetitions that can meet each other are bounded, `.*` between
two literals is `.{0,N}?`, and the tracker examines at most SCAN_CHARS of a line.
tests/integration/test_pattern_linearity.py feeds 1 MB adversarial lines to every pattern.
"""

from __future__ import annotations

import re

# A number such as 2,097,152 or 0.01 or .5: bounded, so a run of digits cannot backtrack.
_NUM = r"(\d[\d,]{0,40}(?:\.\d{1,20})?|\.\d{1,20})"
SCAN_CHARS = 4096  # the most of one line (or one tqdm segment) any pattern examines

# starting
VLLM_VERSION = re.compile(
    r"(?:vLLM (?:API )?server version|\u2588\s[^\u2588]{0,200}?\bversion)\s{1,8}v?([\w.+-]{1,64})"
    r"(?:, serving model (\S{1,512}))?"
)
BANNER_MODEL = re.compile(r"\u2588\s[^\u2588]{0,200}?\bmodel\s{1,8}(\S{1,512})\s{0,64}$")
VLLM_ENGINE_INIT = re.compile(
    r"Initializing a V\d LLM engine \(v([\w.+-]{1,64})\) with config: model='([^']{1,512})'"
)
SGLANG_START = re.compile(r"server_args=ServerArgs\(model_path='([^']{1,512})'")

# weights
WEIGHTS_START = re.compile(
    r"Starting to load model (\S{1,512}?)(?:\.\.\.)?\s{0,64}$|Load weight begin"
)
SHARD_BAR = re.compile(
    r"(?:Loading (?:safetensors|pt|\w{1,32}) checkpoint shards|Multi-thread loading shards)"
    r":\s{0,8}(\d{1,3})%\s{0,8}Completed\s{0,8}\|\s{0,8}(\d{1,9})/(\d{1,9})"
    r"(?:\s{0,8}\[(?P<elapsed>[\d:]{1,20})<(?P<remaining>[\d:?]{1,20}))?"
)
WEIGHTS_TOOK = re.compile(rf"Loading weights took {_NUM} seconds")
MODEL_LOADING_TOOK = re.compile(rf"Model loading took {_NUM} ?GiB(?: memory)? and {_NUM} seconds")
# vLLM before V1 (0.4-0.6): the weights' size (GiB, printed "GB"), then straight to profiling
# the memory left for the KV cache; no compile phase comes between.
OLD_WEIGHTS_TOOK = re.compile(rf"Loading model weights took {_NUM} ?GB")
SGLANG_WEIGHTS_END = re.compile(rf"Load weight end\..{{0,300}}?mem usage={_NUM} GB")

# compile
COMPILE_START = re.compile(
    r"Warming up model for the compilation|Dynamo bytecode transform time|"
    r"Compiling a graph for dynamic shape|Compiling model again|Start compiling"
)
COMPILE_TOOK = re.compile(
    rf"torch\.compile takes? {_NUM} ?s in total|torch\.compile took {_NUM} ?s"
)

# KV cache
KV_AVAILABLE = re.compile(rf"Available KV cache memory: {_NUM} ?GiB")
KV_EXPLICIT = re.compile(rf"Explicitly set \(?{_NUM}(?:/[\d.]+)?\)? ?GiB for KV cache")
KV_TOKENS = re.compile(rf"(?:GPU|CPU|XPU|TPU) KV cache size: {_NUM} tokens")
MAX_CONCURRENCY = re.compile(rf"Maximum concurrency for {_NUM} tokens per request: {_NUM}x")
SGLANG_KV = re.compile(rf"Memory pool end|KV Cache is allocated\. #tokens: {_NUM}")
SGLANG_MAX_TOKENS = re.compile(rf"max_total_num_tokens={_NUM}")
INIT_ENGINE_TOOK = re.compile(
    rf"init engine \(profile, create kv cache, warmup model\) took {_NUM}"
)

# CUDA graphs
GRAPHS_START = re.compile(r"Capturing CUDA graphs?|Capture (?:cuda|CUDA) graph begin")
GRAPHS_DONE = re.compile(
    rf"Graph capturing finished in {_NUM} secs?(?:, took {_NUM} GiB)?|"
    rf"Capture (?:cuda|CUDA) graph end\. Time elapsed: {_NUM} s(?:\. mem usage={_NUM} GB)?"
)

# serving
SERVER_STARTING = re.compile(
    r"Starting vLLM (?:API )?server on (\S{1,512})|Uvicorn running on (\S{1,512})"
)
SERVER_READY = re.compile(
    r"Application startup complete\.|The server is fired up and ready to roll!"
)
SHUTDOWN = re.compile(
    r"\[shutdown\]|Shutting down|shutdown triggered|Received SIGTERM|Gracefully stopping"
)

# runtime stats
VLLM_ENGINE_STATS = re.compile(
    rf"Engine \d+: Avg prompt throughput: {_NUM} tokens/s, Avg generation throughput: "
    rf"{_NUM} tokens/s, Running: (\d{{1,9}}) reqs, (?:Swapped: \d{{1,9}} reqs, )?"
    rf"(?:Pending|Waiting): (\d{{1,9}}) reqs, (?:GPU|CPU|XPU) KV cache usage: {_NUM}%"
    rf"(?:, Prefix cache hit rate: {_NUM}%)?"
)
VLLM_OLD_STATS = re.compile(
    rf"Avg prompt throughput: {_NUM} tokens/s, Avg generation throughput: {_NUM} tokens/s, "
    rf"Running: (\d{{1,9}}) reqs, (?:Swapped: \d{{1,9}} reqs, )?(?:Pending|Waiting): "
    rf"(\d{{1,9}}) reqs, "
    rf"GPU KV cache usage: {_NUM}%"
)
SGLANG_DECODE = re.compile(
    rf"Decode batch\..{{0,200}}?#running-req: (\d{{1,9}}).{{0,200}}?token usage: {_NUM}"
    rf".{{0,200}}?gen throughput \(token/s\): {_NUM}.{{0,200}}?#queue-req: (\d{{1,9}})"
)

# failure
TRACEBACK = "Traceback (most recent call last):"
EXCEPTION_LINE = re.compile(
    r"(?:^|\]\s|\s)((?:[A-Za-z_]\w{0,64}\.){0,8}[A-Za-z_]\w{0,64}(?:Error|Exception)\b:?.*)$"
)
# A fatal line holds one of these (the last, "Killed", only at the end): the tracker's batch
# path rules a fatal line out by searching for them.
FATAL_LITERALS = (
    "Engine core initialization failed",
    "EngineCore failed to start",
    "CUDA out of memory",
    "torch.OutOfMemoryError",
    "RuntimeError: ",
    "ValueError: ",
    "AssertionError",
    "Killed",
)
FATAL = re.compile("|".join([*map(re.escape, FATAL_LITERALS[:-1]), f"{FATAL_LITERALS[-1]}$"]))
# `(Worker_TP3 pid=123) ERROR ...` (vLLM V1) or `[rank3]: ...` (torch.distributed)
PROCESS_PREFIX = re.compile(
    r"^\s{0,8}(?:\((?P<proc>[\w.:-]{1,64}) pid=\d{1,10}\)|\[rank(?P<rank>\d{1,6})\]:)"
)
VLLM_TIMESTAMP = re.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\s")


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
