"""The log lines that mark a model load's progress (DESIGN.md section 6).

vLLM 0.32-0.33 with older variants accepted, and SGLang. Each pattern is a
compiled regex; loadwatch decides what a match means for the phase.
"""

from __future__ import annotations

import re

_NUM = r"([\d,]*\.?\d+)"

# starting
VLLM_VERSION = re.compile(
    r"(?:vLLM (?:API )?server version|\u2588\s.*\bversion)\s+v?([\w.+-]+)(?:, serving model (\S+))?"
)
BANNER_MODEL = re.compile(r"\u2588\s.*\bmodel\s+(\S+)\s*$")
VLLM_ENGINE_INIT = re.compile(
    r"Initializing a V\d LLM engine \(v([\w.+-]+)\) with config: model='([^']+)'"
)
SGLANG_START = re.compile(r"server_args=ServerArgs\(model_path='([^']+)'")

# weights
WEIGHTS_START = re.compile(r"Starting to load model (\S+?)(?:\.\.\.)?\s*$|Load weight begin")
SHARD_BAR = re.compile(
    r"Loading (?:safetensors|pt|\w+) checkpoint shards:\s*(\d+)%\s*Completed\s*\|\s*(\d+)/(\d+)"
    r"(?:\s*\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:?]+))?"
)
WEIGHTS_TOOK = re.compile(rf"Loading weights took {_NUM} seconds")
MODEL_LOADING_TOOK = re.compile(rf"Model loading took {_NUM} ?GiB(?: memory)? and {_NUM} seconds")
SGLANG_WEIGHTS_END = re.compile(rf"Load weight end\..*?mem usage={_NUM} GB")

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
SERVER_STARTING = re.compile(r"Starting vLLM (?:API )?server on (\S+)|Uvicorn running on (\S+)")
SERVER_READY = re.compile(
    r"Application startup complete\.|The server is fired up and ready to roll!"
)
SHUTDOWN = re.compile(
    r"\[shutdown\]|Shutting down|shutdown triggered|Received SIGTERM|Gracefully stopping"
)

# runtime stats
VLLM_ENGINE_STATS = re.compile(
    rf"Engine \d+: Avg prompt throughput: {_NUM} tokens/s, Avg generation throughput: "
    rf"{_NUM} tokens/s, Running: (\d+) reqs, (?:Swapped: \d+ reqs, )?(?:Pending|Waiting): "
    rf"(\d+) reqs, (?:GPU|CPU|XPU) KV cache usage: {_NUM}%"
    rf"(?:, Prefix cache hit rate: {_NUM}%)?"
)
VLLM_OLD_STATS = re.compile(
    rf"Avg prompt throughput: {_NUM} tokens/s, Avg generation throughput: {_NUM} tokens/s, "
    rf"Running: (\d+) reqs, (?:Swapped: \d+ reqs, )?(?:Pending|Waiting): (\d+) reqs, "
    rf"GPU KV cache usage: {_NUM}%"
)
SGLANG_DECODE = re.compile(
    rf"Decode batch\..*?#running-req: (\d+).*?token usage: {_NUM}.*?"
    rf"gen throughput \(token/s\): {_NUM}.*?#queue-req: (\d+)"
)

# failure
TRACEBACK = "Traceback (most recent call last):"
EXCEPTION_LINE = re.compile(
    r"(?:^|\]\s|\s)((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception)\b:?.*)$"
)
FATAL = re.compile(
    r"Engine core initialization failed|EngineCore failed to start|CUDA out of memory|"
    r"torch\.OutOfMemoryError|RuntimeError: |ValueError: |AssertionError|Killed$"
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
