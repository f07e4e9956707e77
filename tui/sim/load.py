"""The model load, phase by phase, in vLLM's log lines and worker memory.

Each phase takes its share of `load_seconds` (spec.LOAD_PHASE_SHARES, a
compressed ~30 minute real load); durations printed in the log are the real
elapsed ones, so anything estimating progress from the log sees consistent
numbers. Worker memory follows through `<state>/progress.json`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

from tui.sim.deployment import load_error, load_slowdown
from tui.sim.pd import args_repr
from tui.sim.procs import is_alive, read_json, write_json_atomic
from tui.sim.shards import read_shard, shard_files
from tui.sim.spec import (
    CUDA_GRAPHS_BYTES,
    GIB,
    GPU_COUNT,
    GPU_MEMORY_TOTAL_BYTES,
    GPU_MEMORY_UTILIZATION,
    LOAD_PHASE_SHARES,
    VLLM_VERSION,
    ServerSettings,
)
from tui.sim.vlog import VllmLog, shard_bar

FP8_ERROR = (
    "ValueError: The output_size of gate's and up's weight = 192 is not divisible by "
    "weight quantization block_n = 128."
)
SITE = "/opt/vllm/venv/lib/python3.12/site-packages/vllm"
# WARNING lines real vLLM loads print (the first from tests/support/fixtures/vllm-0.32-cpu), so the
# log pane's level filter has something to show on the demo.
ULIMIT_WARNING = (
    "Found ulimit of 20000 and failed to automatically increase with error current limit "
    "exceeds maximum limit. This can cause fd limit errors like `OSError: [Errno 24] Too many "
    "open files`. Consider increasing with ulimit -n"
)
ALLREDUCE_WARNING = (
    "Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs. "
    "To silence this warning, specify disable_custom_all_reduce=True explicitly."
)
MOE_CONFIG_WARNING = (
    "Using default MoE config. Performance might be sub-optimal! Config file not found at "
    f"{SITE}/model_executor/layers/fused_moe/configs/E=384,N=256,"
    "device_name=NVIDIA_RTX_PRO_6000_Blackwell_Server_Edition.json"
)
FP8_TRACEBACK = (
    "Traceback (most recent call last):",
    f'  File "{SITE}/v1/executor/multiproc_executor.py", line 743, in worker_main',
    "    worker = WorkerProc(*args, **kwargs)",
    f'  File "{SITE}/v1/executor/multiproc_executor.py", line 569, in __init__',
    "    self.worker.load_model()",
    f'  File "{SITE}/v1/worker/gpu_worker.py", line 273, in load_model',
    "    self.model_runner.load_model(eep_scale_up=eep_scale_up)",
    f'  File "{SITE}/v1/worker/gpu_model_runner.py", line 3101, in load_model',
    "    self.model = model_loader.load_model(",
    f'  File "{SITE}/model_executor/model_loader/base_loader.py", line 49, in load_model',
    "    model = initialize_model(",
    f'  File "{SITE}/model_executor/layers/quantization/fp8.py", line 412, in create_weights',
    "    validate_fp8_block_shape(",
    f'  File "{SITE}/model_executor/layers/quantization/utils/fp8_utils.py", line 1077, '
    "in validate_fp8_block_shape",
    "    raise ValueError(",
    FP8_ERROR,
)


def memory_held_by_others(state_dir: Path, mine: set[int], gpu_count: int) -> list[int]:
    """Bytes each GPU holds for live processes that are not this server's (leftovers)."""
    held = [0] * gpu_count
    folder = state_dir / "gpu"
    for path in folder.glob("*.json") if folder.is_dir() else []:
        data = read_json(path)
        try:
            pid, ticks = int(data["pid"]), int(data["start_time_ticks"])  # type: ignore[call-overload]
            index, used = int(data["gpu_index"]), int(data["used_bytes"])  # type: ignore[call-overload]
        except (KeyError, TypeError, ValueError):
            continue
        if pid not in mine and 0 <= index < gpu_count and is_alive(pid, ticks):
            held[index] += used
    return held


def free_memory_error(free_bytes: int, total_bytes: int, utilization: float) -> str:
    """vLLM's startup check (v1/worker/gpu_worker.py), word for word."""
    wanted = utilization * total_bytes
    return (
        f"ValueError: Free memory on device ({free_bytes / GIB:.2f}/{total_bytes / GIB:.2f} GiB) "
        f"on startup is less than desired GPU memory utilization ({utilization}, "
        f"{wanted / GIB:.2f} GiB). Decrease GPU memory utilization or reduce GPU memory used "
        "by other processes."
    )


class LoadClock:
    """The load's clock: wall time, or behind it while a load that began earlier catches up.

    A load resumed mid-way (`ServerSettings.load_started_s`) starts `behind_s` in the
    past: its sleeps pass at once until the clock reaches now, so the lines already due
    are written immediately, stamped when they would have been, and the rest in real time.
    """

    def __init__(self, started_s: float | None) -> None:
        self.behind_s = max(0.0, time.time() - started_s) if started_s is not None else 0.0

    def now(self) -> float:
        return time.time() - self.behind_s

    async def sleep(self, seconds: float) -> None:
        skipped = min(self.behind_s, max(seconds, 0.0))
        self.behind_s -= skipped
        if seconds - skipped > 0:
            await asyncio.sleep(seconds - skipped)
        else:
            await asyncio.sleep(0)


class LoadFailed(Exception):
    """The simulated load crashed (--fail-at-shard); the traceback is already logged."""


class LoadSequence:
    """Writes the load log and the memory progress; `run()` returns when ready to bind."""

    def __init__(
        self,
        settings: ServerSettings,
        log: VllmLog,
        engine_pid: int,
        worker_pids: list[int],
        set_phase: Callable[[str], None],
    ) -> None:
        self.s = settings
        self.log = log
        self.api_pid = os.getpid()
        self.engine_pid = engine_pid
        self.worker_pids = worker_pids or [engine_pid]
        self.set_phase = set_phase
        self.progress = {"weights_frac": 0.0, "kv_frac": 0.0, "graphs_frac": 0.0}
        self.progress_path = Path(settings.state_dir) / "progress.json"
        self.clock = LoadClock(settings.load_started_s)

    def api(self, source: str, message: str, level: str = "INFO") -> None:
        self.log.line("APIServer", self.api_pid, level, source, message, self.clock.now())

    def core(self, source: str, message: str, level: str = "INFO") -> None:
        self.log.line("EngineCore_DP0", self.engine_pid, level, source, message, self.clock.now())

    def worker(self, rank: int, source: str, message: str, level: str = "INFO") -> None:
        pid = self.worker_pids[rank % len(self.worker_pids)]
        self.log.line(f"Worker_TP{rank}", pid, level, source, message, self.clock.now())

    def _publish(self, **fractions: float) -> None:
        self.progress.update(fractions)
        write_json_atomic(self.progress_path, dict(self.progress))

    def _phase_s(self, phase: str) -> float:
        return self.s.load_seconds * LOAD_PHASE_SHARES[phase] * load_slowdown()

    async def run(self) -> None:
        s = self.s
        self.set_phase("starting")
        self._publish()
        start = self.clock.now()
        self.api(
            "api_server.py:1897", f"vLLM server version {VLLM_VERSION}, serving model {s.model}"
        )
        self.api(
            "utils.py:328",
            f"non-default args: {{'model_tag': '{s.model}', 'host': '127.0.0.1', 'port': {s.port}, "
            f"'model': '{s.model}', 'trust_remote_code': True, 'served_model_name': "
            f"['{s.served_model_name}'], 'tensor_parallel_size': {s.tp}"
            + (
                f", 'data_parallel_size': {s.data_parallel_size}"
                if s.data_parallel_size > 1
                else ""
            )
            + args_repr(s.kv_role)
            + "}",
        )
        self.api("model.py:733", "Resolved architecture: KimiK25ForConditionalGeneration")
        self.api("model.py:2152", f"Using max model len {s.max_model_len}")
        self.api("system_utils.py:255", ULIMIT_WARNING, "WARNING")  # as real vLLM logs it
        await self.clock.sleep(self._phase_s("starting") / 2)
        self.core(
            "core.py:133",
            f"Initializing a V1 LLM engine (v{VLLM_VERSION}) with config: model='{s.model}', "
            f"tokenizer='{s.model}', dtype=torch.bfloat16, max_seq_len={s.max_model_len}, "
            f"tensor_parallel_size={s.tp}, quantization=compressed-tensors, "
            f"served_model_name={s.served_model_name}, enable_prefix_caching=True",
        )
        for rank in range(s.tp):
            self.worker(
                rank,
                "parallel_state.py:1906",
                f"world_size={s.tp} rank={rank} local_rank={rank} backend=nccl",
            )
        if s.tp > 2:  # the simulated box is PCIe only: vLLM warns on every rank
            for rank in range(s.tp):
                self.worker(rank, "custom_all_reduce.py:154", ALLREDUCE_WARNING, "WARNING")
        await self.clock.sleep(self._phase_s("starting") / 2)
        self._check_free_memory()
        await self._weights()
        await self._compile()
        await self._kv_cache()
        await self._graphs()
        self.core(
            "core.py:402",
            f"init engine (profile, create kv cache, warmup model) took "
            f"{self.clock.now() - start:.2f} s",
        )
        self.set_phase("api")
        self.api("entry.py:136", "Supported tasks: ['generate']")
        await self.clock.sleep(self._phase_s("api"))

    async def _weights(self) -> None:
        s = self.s
        self.set_phase("weights")
        self.worker(0, "gpu_model_runner.py:3097", f"Starting to load model {s.model}...")
        begin = self.clock.now()
        per_shard = self._phase_s("weights") / max(s.shards, 1)
        self.log.raw(shard_bar(0, s.shards, 0.0))
        files = shard_files(s.shard_dir) if s.shard_dir else []
        for done in range(1, s.shards + 1):
            if done <= len(files):
                await asyncio.to_thread(read_shard, files[done - 1], s.disk_bytes_per_s)
            await self.clock.sleep(max(begin + per_shard * done - self.clock.now(), 0.0))
            if s.faults.fail_at_shard is not None and done >= s.faults.fail_at_shard:
                self._crash()
            self._publish(weights_frac=done / s.shards)
            self.log.raw(shard_bar(done, s.shards, self.clock.now() - begin))
        self.log.raw("")
        took = self.clock.now() - begin
        self.worker(0, "default_loader.py:501", f"Loading weights took {took:.2f} seconds")
        self.worker(
            0,
            "gpu_model_runner.py:3176",
            f"Model loading took {s.weights_bytes_per_gpu / GIB:.4f} GiB memory and "
            f"{took + self._phase_s('starting') / 2:.6f} seconds",
        )

    def _check_free_memory(self) -> None:
        """Refuse to start on GPUs that leftovers fill, as vLLM's worker does at init.

        A worker only holds its CUDA context at this point, so a GPU never shows more
        memory in use than it has: the start fails instead of loading on top.
        """
        held = memory_held_by_others(
            Path(self.s.state_dir), {self.engine_pid, *self.worker_pids}, GPU_COUNT
        )
        wanted = GPU_MEMORY_UTILIZATION * GPU_MEMORY_TOTAL_BYTES
        short = [
            (rank, GPU_MEMORY_TOTAL_BYTES - held[rank % GPU_COUNT])
            for rank in range(self.s.tp)
            if GPU_MEMORY_TOTAL_BYTES - held[rank % GPU_COUNT] < wanted
        ]
        if not short:
            return
        traceback = (
            "Traceback (most recent call last):",
            f'  File "{SITE}/v1/executor/multiproc_executor.py", line 743, in worker_main',
            "    worker = WorkerProc(*args, **kwargs)",
            f'  File "{SITE}/v1/worker/gpu_worker.py", line 231, in init_device',
            "    raise ValueError(",
        )
        first_error = ""
        for rank, free in short:
            error = free_memory_error(free, GPU_MEMORY_TOTAL_BYTES, GPU_MEMORY_UTILIZATION)
            first_error = first_error or error
            self._fail_lines(rank, (*traceback, error))
        self._fail(first_error)

    def _fail_lines(self, rank: int, lines: tuple[str, ...]) -> None:
        self.worker(rank, "multiproc_executor.py:772", "WorkerProc failed to start.", "ERROR")
        for text in lines:
            self.worker(rank, "multiproc_executor.py:772", text, "ERROR")

    def _crash(self) -> None:
        for rank in range(self.s.tp):
            self._fail_lines(rank, FP8_TRACEBACK)
        self._fail(FP8_ERROR)

    def _fail(self, error: str) -> None:
        """EngineCore gives up after a worker failed: the API server exits 1, the unit fails."""
        self.set_phase("failed")
        self.core("core.py:843", "EngineCore failed to start.", "ERROR")
        self.core("core.py:843", error, "ERROR")
        self.log.raw("Traceback (most recent call last):")
        self.log.raw(f'  File "{SITE}/v1/engine/core_client.py", line 98, in make_async_mp_client')
        self.log.raw(
            "RuntimeError: Engine core initialization failed. See root cause above. "
            "Failed core proc(s): {}"
        )
        raise LoadFailed(error)

    async def _compile(self) -> None:
        self.set_phase("compile")
        begin = self.clock.now()
        share = self._phase_s("compile")
        await self.clock.sleep(share * 0.3)
        self.worker(0, "backends.py:548", f"Dynamo bytecode transform time: {share * 0.3:.2f} s")
        await self.clock.sleep(share * 0.7)
        took = self.clock.now() - begin
        self.worker(
            0, "backends.py:215", f"Compiling a graph for dynamic shape takes {took * 0.7:.2f} s"
        )
        self.worker(0, "monitor.py:34", f"torch.compile took {took:.2f} s in total")

    async def _kv_cache(self) -> None:
        s = self.s
        self.set_phase("kv_cache")
        self.worker(0, "fused_moe.py:1066", MOE_CONFIG_WARNING, "WARNING")
        await self.clock.sleep(self._phase_s("kv_cache") / 2)
        error = load_error(s)
        if error is not None:
            for rank in range(s.tp):
                self._fail_lines(rank, ("Traceback (most recent call last):", error))
            self._fail(error)
        self.worker(
            0, "gpu_worker.py:298", f"Available KV cache memory: {s.kv_bytes_per_gpu / GIB:.2f} GiB"
        )
        self._publish(kv_frac=1.0)
        tokens = s.kv_cache_tokens
        self.core("kv_cache_utils.py:1087", f"GPU KV cache size: {tokens:,} tokens")
        self.core(
            "kv_cache_utils.py:1091",
            f"Maximum concurrency for {s.max_model_len:,} tokens per request: "
            f"{tokens / s.max_model_len:.2f}x",
        )
        await self.clock.sleep(self._phase_s("kv_cache") / 2)

    async def _graphs(self) -> None:
        self.set_phase("cuda_graphs")
        begin = self.clock.now()
        sizes = 67
        self.worker(
            0,
            "gpu_model_runner.py:3958",
            f"Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 0/{sizes}",
        )
        steps = 4
        for step in range(1, steps + 1):
            await self.clock.sleep(self._phase_s("cuda_graphs") / steps)
            self._publish(graphs_frac=step / steps)
        took = self.clock.now() - begin
        self.worker(
            0,
            "gpu_model_runner.py:4049",
            f"Graph capturing finished in {max(round(took), 1)} secs, "
            f"took {CUDA_GRAPHS_BYTES / GIB:.2f} GiB",
        )
