"""vLLM's deployment flags on the simulated server, in a known way, and the unit's drop-ins.

`servedeck tune` changes a unit's flags through a systemd drop-in; the simulated unit
reads its drop-ins at each start (as systemd does after a daemon-reload) and the server
takes vLLM's own spellings. What each flag does to the simulated engine, the truth a
tune is checked against (`tui.sim.capacity` replays the same settings):
- `--tensor-parallel-size N`: N ranks, each holding weights / N; the KV room is what
  the memory budget leaves after them.
- `--gpu-memory-utilization F`: budget F x 96 GB per GPU; KV room = budget - weights -
  CUDA context - 2 GiB activations. None left: the load fails at the KV cache step with
  vLLM's "No available memory for the cache blocks".
- `--enable-expert-parallel`: each decode step EP_DECODE_FACTOR as long (experts whole
  on their rank instead of an all-reduce per layer over PCIe).
- `--kv-cache-dtype fp8`: half the KV bytes per token.
- `--max-num-seqs`, `--max-num-batched-tokens`, `--enable-prefix-caching`: the
  scheduler's own limits, as vLLM's.
- `SERVEDECK_SIM_OOM_AT_LOAD=1` in the environment: a CUDA out-of-memory at the KV cache
  step, on demand.
- `SERVEDECK_SIM_LOAD_SLOWDOWN=N` in the environment: every load phase N times as long (a
  load that outlives a tune's deadline, as a cold torch.compile cache does).
"""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import replace
from pathlib import Path

from tui.sim import spec

EP_DECODE_FACTOR = 0.8
ACTIVATIONS_BYTES = 2 * spec.GIB
OOM_ENV = "SERVEDECK_SIM_OOM_AT_LOAD"
SLOWDOWN_ENV = "SERVEDECK_SIM_LOAD_SLOWDOWN"
NO_KV_ERROR = (
    "ValueError: No available memory for the cache blocks. Try increasing "
    "`gpu_memory_utilization` when initializing the engine."
)
CUDA_OOM_ERROR = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
    "total capacity of 95.59 GiB of which 1.12 GiB is free."
)


def add_vllm_flags(parser: argparse.ArgumentParser) -> None:
    """vLLM's spellings of the deployment flags (None: not given, the settings stand)."""
    parser.add_argument("--tensor-parallel-size", type=int, default=None)
    parser.add_argument("--max-num-seqs", type=int, default=None)
    parser.add_argument("--gpu-memory-utilization", type=float, default=None)
    parser.add_argument("--kv-cache-dtype", default=None)
    parser.add_argument(
        "--enable-expert-parallel", action=argparse.BooleanOptionalAction, default=None
    )


def apply_vllm_flags(
    settings: spec.ServerSettings, args: argparse.Namespace
) -> spec.ServerSettings:
    """The settings as vLLM's flags change them (the module docstring states how)."""
    s = settings
    if args.max_num_seqs is not None:
        s = replace(s, max_batch=args.max_num_seqs)
    if args.kv_cache_dtype is not None and args.kv_cache_dtype.startswith("fp8"):
        s = replace(s, kv_bytes_per_token=s.kv_bytes_per_token // 2)
    if args.enable_expert_parallel:
        s = replace(s, decode_step_s=s.decode_step_s * EP_DECODE_FACTOR)
    tp, gmu = args.tensor_parallel_size, args.gpu_memory_utilization
    if tp is not None or gmu is not None:
        tp = tp or s.tp
        weights = spec.MODEL_WEIGHTS_BYTES // tp
        budget = int(spec.GPU_MEMORY_TOTAL_BYTES * (gmu or spec.GPU_MEMORY_UTILIZATION))
        room = budget - weights - spec.CUDA_CONTEXT_BYTES - ACTIVATIONS_BYTES
        s = replace(s, tp=tp, weights_bytes_per_gpu=weights, kv_bytes_per_gpu=max(room, 0))
    return s


def load_error(settings: spec.ServerSettings) -> str | None:
    """The error the KV cache step ends with, if it does: on demand, or no room left."""
    if os.environ.get(OOM_ENV) == "1":
        return CUDA_OOM_ERROR
    if settings.kv_bytes_per_gpu <= 0:
        return NO_KV_ERROR
    return None


def load_slowdown() -> float:
    """How many times as long each load phase lasts (1: as the settings say; a bad value: 1)."""
    try:
        factor = float(os.environ.get(SLOWDOWN_ENV, "1"))
    except ValueError:
        return 1.0
    return factor if factor > 0 else 1.0


# The flags the simulated server models (valued ones take the next word); any other
# vLLM flag of the unit's command line is dropped with its value, and the box keeps its
# own --host and --port.
VALUED_FLAGS = frozenset(
    (
        "--model",
        "--served-model-name",
        "--tensor-parallel-size",
        "--max-num-seqs",
        "--max-num-batched-tokens",
        "--gpu-memory-utilization",
        "--kv-cache-dtype",
        "--max-model-len",
    )
)
SWITCHES = frozenset(
    (
        "--enable-expert-parallel",
        "--no-enable-expert-parallel",
        "--enable-prefix-caching",
        "--no-enable-prefix-caching",
    )
)


def modelled_flags(words: list[str]) -> list[str]:
    """The words of the flags the simulator models, in order; the rest dropped."""
    kept: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        name = word.partition("=")[0]
        takes_value = "=" not in word and i + 1 < len(words) and not words[i + 1].startswith("--")
        if name in VALUED_FLAGS:
            kept += words[i : i + 2] if takes_value else [word]
        elif name in SWITCHES:
            kept.append(word)
        i += 2 if takes_value and name not in SWITCHES else 1
    return kept


def dropin_dir(state_dir: Path, unit: str) -> Path:
    """Where the simulated unit's drop-ins live (systemd: /etc/systemd/system/UNIT.d)."""
    return state_dir / f"{unit}.d"


def dropin_words(folder: Path) -> tuple[list[str], list[str]]:
    """(vLLM flags, NAME=value environment) of the drop-ins, in systemd's order.

    The last `ExecStart=` wins; its words from the first flag on are passed to the
    server (a model path after `serve` becomes `--model`). `Environment=` lines add up.
    """
    flags: list[str] = []
    env: list[str] = []
    for path in sorted(folder.glob("*.conf")) if folder.is_dir() else []:
        text = path.read_text(encoding="utf-8", errors="replace").replace("\\\n", " ")
        for line in text.splitlines():
            key, _, value = line.strip().partition("=")
            if key == "Environment":
                env += shlex.split(value)
            elif key == "ExecStart" and value.strip():
                words = shlex.split(value)
                first = next((i for i, w in enumerate(words) if w.startswith("--")), len(words))
                flags = modelled_flags(words[first:])
                if "serve" in words[:first] and words.index("serve") + 1 < first:
                    flags = ["--model", words[words.index("serve") + 1], *flags]
    return flags, env
