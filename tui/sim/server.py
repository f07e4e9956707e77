"""`python -m tui.sim.server`: a simulated vLLM server process on 127.0.0.1.

Like vLLM it prints its load log, starts `VLLM::EngineCore` (which starts the
`VLLM::Worker_TPn` processes) and only binds its port once the engine is up, so
connections are refused while loading. On SIGTERM it stops the whole tree in
about two seconds, unless `--orphans-on-stop N` (or a file
`<state>/orphans-on-stop` holding N, read at stop time) asks it to leave N
workers behind. It writes `<state>/activity.json` twice a second for the GPU
model and logs vLLM's `Engine 000:` line while busy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from aiohttp import web

from tui.sim.deployment import add_vllm_flags, apply_vllm_flags
from tui.sim.engine import SimEngine
from tui.sim.faults import RuntimeFaults
from tui.sim.hang import SHM_WARNING, HangState
from tui.sim.http_api import SimApi
from tui.sim.load import LoadFailed, LoadSequence
from tui.sim.lora import add_engine_args, engine_settings
from tui.sim.procs import is_alive, register_pid, write_json_atomic
from tui.sim.spec import CUDA_CONTEXT_BYTES, CUDA_GRAPHS_BYTES, ServerFaults, ServerSettings
from tui.sim.vlog import VllmLog

BUSY_UTILIZATION_PCT = 97.0
LOADING_UTILIZATION_PCT = {
    "starting": 0.0,
    "weights": 3.0,
    "compile": 45.0,
    "kv_cache": 70.0,
    "cuda_graphs": 85.0,
    "api": 5.0,
}


# How often the server checks that the process that started it is still there.
PARENT_POLL_S = 1.0
# How long the engine has to carry out a stop plan before it is SIGKILLed. Its own steps
# take at most ~3.5 s (orphans told and published, 2 s; the rest reaped, 1.5 s); on a
# starved CPU it may not even run its SIGTERM handler for seconds, and a kill before it
# tells the orphans leaves none (its workers follow their dead parent out). Under the
# unit's own stop timeout (10 s), whose SIGKILL of the process group would end them too.
ENGINE_STOP_S = 6.0


class SimServer:
    """One simulated vLLM API server and its process tree."""

    def __init__(self, settings: ServerSettings, faults: RuntimeFaults) -> None:
        self.s = settings
        self.faults = faults
        self.state_dir = Path(settings.state_dir)
        (self.state_dir / "gpu").mkdir(parents=True, exist_ok=True)
        self.log = VllmLog(self.state_dir / "server.log")
        self.phase = "starting"
        self.engine_proc: subprocess.Popen[bytes] | None = None
        self.worker_pids: list[int] = []
        self.engine: SimEngine | None = None
        self.dp_engines: list[SimEngine] = []
        self.stop_event = asyncio.Event()
        self.parent_gone = False
        self._busy_mark = (time.monotonic(), 0.0)
        self._utilization = 0.0
        self.hang = HangState()
        self._spinning = False

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        self._write_activity()

    # -- processes ------------------------------------------------------------
    async def spawn_engine(self) -> None:
        s = self.s
        argv = [
            sys.executable,
            "-m",
            "tui.sim.procs",
            "engine",
            "--state-dir",
            str(self.state_dir),
            "--tp",
            str(s.tp),
            "--context-bytes",
            str(CUDA_CONTEXT_BYTES),
            "--weights-bytes",
            str(s.weights_bytes_per_gpu),
            "--kv-bytes",
            str(s.kv_bytes_per_gpu),
            "--graphs-bytes",
            str(CUDA_GRAPHS_BYTES),
        ]
        if s.faults.defunct_worker:
            argv.append("--defunct-worker")
        if s.faults.lagging_rank is not None:
            argv += ["--lagging-rank", str(s.faults.lagging_rank)]
        self.engine_proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        assert self.engine_proc.stdout is not None
        line = await asyncio.to_thread(self.engine_proc.stdout.readline)
        self.worker_pids = [int(pid) for pid in line.decode().split()[1:]]

    def orphan_count(self) -> int:
        if self.parent_gone:
            return 0
        override = self.state_dir / "orphans-on-stop"
        if override.exists():
            with contextlib.suppress(ValueError, OSError):
                return int(override.read_text().strip() or "0")
        return self.s.faults.orphans_on_stop

    async def stop_tree(self, orphans: int) -> None:
        """SIGTERM the engine with a stop plan; SIGKILL it if it has not left in ENGINE_STOP_S,
        then every worker that was not to stay."""
        write_json_atomic(
            self.state_dir / "stop-plan.json",
            {"orphans": orphans, "stubborn": self.s.faults.stubborn_orphans},
        )
        proc = self.engine_proc
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.to_thread(proc.wait, ENGINE_STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            await asyncio.to_thread(proc.wait)
        for pid in self.worker_pids[orphans:]:
            if is_alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    # -- activity -------------------------------------------------------------
    def _write_activity(self) -> None:
        engine = self.engine
        running = len(engine.running) if engine else 0
        waiting = len(engine.waiting) if engine else 0
        if engine is not None and self.phase == "serving":
            now = time.monotonic()
            then, busy_then = self._busy_mark
            if now - then >= 0.25:
                fraction = min((engine.busy_s - busy_then) / (now - then), 1.0)
                self._utilization = BUSY_UTILIZATION_PCT * fraction
                self._busy_mark = (now, engine.busy_s)
            utilization = BUSY_UTILIZATION_PCT if self._spinning else self._utilization
        else:
            utilization = LOADING_UTILIZATION_PCT.get(self.phase, 0.0)
        write_json_atomic(
            self.state_dir / "activity.json",
            {
                "pid": os.getpid(),
                "phase": self.phase,
                "running": running,
                "waiting": waiting,
                "utilization_pct": utilization,
                "kv_cache_usage": engine.kv_usage() if engine else 0.0,
                "generation_tokens_total": engine.generation_tokens_total if engine else 0,
                "prompt_tokens_total": engine.prompt_tokens_total if engine else 0,
                "updated_s": time.time(),
            },
        )

    def _apply_hang(self) -> None:
        """The faults of tui.sim.hang: no step while a rank is missing or a hang is on."""
        if self.engine is None:
            return
        self.hang.apply_stop(self.faults.stop_rank, self.worker_pids)
        engine_pid = [self.engine_proc.pid] if self.engine_proc is not None else []
        missing = self.hang.rank_missing(engine_pid + self.worker_pids)
        # One rank missing: the others spin in the collective (GPUs at 100 %, no token).
        self._spinning = missing or self.faults.hang == "spin"
        if self._spinning or self.faults.hang == "cpu":
            self.engine.stall(1.0)
        if self.hang.shm_warning_due(self.faults.hang):
            self.log.line(
                "EngineCore_DP0", os.getpid(), "WARNING", "shm_broadcast.py:466", SHM_WARNING
            )

    async def activity_loop(self) -> None:
        while True:
            self._apply_hang()
            self._write_activity()
            await asyncio.sleep(0.5)

    async def stats_loop(self) -> None:
        """vLLM's periodic `Engine 000:` line, while there is traffic (and once after)."""
        assert self.engine is not None
        engine = self.engine
        last = (time.monotonic(), engine.prompt_tokens_total, engine.generation_tokens_total)
        was_busy = False
        while True:
            await asyncio.sleep(self.s.log_interval_s)
            now = time.monotonic()
            elapsed = max(now - last[0], 1e-9)
            prompt = (engine.prompt_tokens_total - last[1]) / elapsed
            generation = (engine.generation_tokens_total - last[2]) / elapsed
            last = (now, engine.prompt_tokens_total, engine.generation_tokens_total)
            busy = bool(prompt or generation or engine.running or engine.waiting)
            if busy or was_busy:
                self.log.line(
                    "APIServer",
                    os.getpid(),
                    "INFO",
                    "loggers.py:257",
                    f"Engine 000: Avg prompt throughput: {prompt:.1f} tokens/s, "
                    f"Avg generation throughput: {generation:.1f} tokens/s, "
                    f"Running: {len(engine.running)} reqs, Waiting: {len(engine.waiting)} reqs, "
                    f"GPU KV cache usage: {100 * engine.kv_usage():.1f}%, "
                    "Prefix cache hit rate: 0.0%",
                )
            was_busy = busy

    # -- lifecycle ------------------------------------------------------------
    async def watch_parent(self) -> None:
        """The box that started us died without stopping us (a crashed or killed console):
        stop the whole tree, leaving no orphans, so no simulated server outlives its box."""
        parent = os.getppid()
        while os.getppid() == parent:
            await asyncio.sleep(PARENT_POLL_S)
        self.parent_gone = True
        self.stop_event.set()

    async def serve(self) -> int:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.stop_event.set)
        self.parent_watch = asyncio.create_task(self.watch_parent())
        register_pid(self.state_dir, "APIServer")
        # A new load starts from nothing: the last load's progress must not size new workers.
        write_json_atomic(
            self.state_dir / "progress.json",
            {"weights_frac": 0.0, "kv_frac": 0.0, "graphs_frac": 0.0},
        )
        await self.spawn_engine()
        assert self.engine_proc is not None
        sequence = LoadSequence(
            self.s, self.log, self.engine_proc.pid, self.worker_pids, self.set_phase
        )
        loading = asyncio.create_task(sequence.run())
        stopping = asyncio.create_task(self.stop_event.wait())
        await asyncio.wait({loading, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if not loading.done():
            loading.cancel()
            await asyncio.gather(loading, return_exceptions=True)
            return await self.shutdown(None, [])
        if isinstance(loading.exception(), LoadFailed):
            await self.stop_tree(orphans=0)
            self.set_phase("failed")
            return 1
        self.engine = SimEngine(self.s)
        # Data-parallel ranks beyond the first: engines of their own, behind the one API.
        self.dp_engines = [SimEngine(self.s) for _ in range(max(self.s.data_parallel_size, 1) - 1)]
        for engine in (self.engine, *self.dp_engines):
            engine.start()
        api = SimApi(self.s, self.engine, self.faults, self.dp_engines)
        # Like vLLM, abort a request as soon as its client goes away (even while it waits).
        runner = web.AppRunner(
            api.app(), access_log=None, handle_signals=False, handler_cancellation=True
        )
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self.s.port, backlog=1024)
        await site.start()
        pid = os.getpid()
        self.log.line(
            "APIServer",
            pid,
            "INFO",
            "api_server.py:1971",
            f"Starting vLLM server on http://127.0.0.1:{self.s.port}",
            sequence.clock.now(),
        )
        self.log.raw(f"INFO:     Started server process [{pid}]")
        self.log.raw("INFO:     Waiting for application startup.")
        self.log.raw("INFO:     Application startup complete.")
        self.set_phase("serving")
        helpers = [
            asyncio.create_task(self.activity_loop()),
            asyncio.create_task(self.stats_loop()),
        ]
        await stopping
        return await self.shutdown(runner, helpers)

    async def shutdown(
        self, runner: web.AppRunner | None, helpers: list[asyncio.Task[None]]
    ) -> int:
        pid = os.getpid()
        self.set_phase("stopping")
        self.log.line(
            "APIServer", pid, "INFO", "launcher.py:254", "[shutdown] API server: shutdown triggered"
        )
        for task in helpers:
            task.cancel()
        await self.stop_tree(self.orphan_count())
        if self.engine is not None:
            await self.engine.stop()
        await asyncio.gather(*(engine.stop() for engine in self.dp_engines))
        if runner is not None:
            await runner.shutdown()
            await runner.cleanup()
        self.log.raw("INFO:     Shutting down")
        self.log.raw("INFO:     Application shutdown complete.")
        self.set_phase("stopped")
        self.log.close()
        return 0


def parse_args(argv: list[str] | None = None) -> tuple[ServerSettings, RuntimeFaults]:
    p = argparse.ArgumentParser(prog="python -m tui.sim.server", description=__doc__)
    d = ServerSettings(state_dir="", port=0)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--model", default=d.model)
    p.add_argument("--served-model-name", default=d.served_model_name)
    p.add_argument("--load-seconds", type=float, default=d.load_seconds)
    p.add_argument("--load-started-s", type=float, default=None)  # ServerSettings says why
    p.add_argument("--shards", type=int, default=d.shards)
    p.add_argument("--tp", type=int, default=d.tp)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--weights-bytes-per-gpu", type=int, default=d.weights_bytes_per_gpu)
    p.add_argument("--kv-bytes-per-gpu", type=int, default=d.kv_bytes_per_gpu)
    p.add_argument("--max-model-len", type=int, default=d.max_model_len)
    p.add_argument("--prefill-tok-s", type=float, default=d.prefill_tok_s)
    p.add_argument("--decode-step-s", type=float, default=d.decode_step_s)
    p.add_argument("--decode-alpha", type=float, default=d.decode_alpha)
    p.add_argument("--max-batch", type=int, default=d.max_batch)
    p.add_argument("--max-num-batched-tokens", type=int, default=d.max_num_batched_tokens)
    p.add_argument("--log-interval-s", type=float, default=d.log_interval_s)
    p.add_argument("--time-scale", type=float, default=d.time_scale)
    p.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction, default=False)
    add_engine_args(p)
    add_vllm_flags(p)
    p.add_argument("--fail-at-shard", type=int, default=None)
    p.add_argument("--orphans-on-stop", type=int, default=0)
    p.add_argument("--stubborn-orphans", action="store_true")
    p.add_argument("--defunct-worker", action="store_true")
    p.add_argument("--lagging-rank", type=int, default=None)
    p.add_argument("--http-5xx-rate", type=float, default=0.0)
    p.add_argument("--cut-stream-after-tokens", type=int, default=None)
    p.add_argument("--shard-dir", default=None)
    p.add_argument("--disk-bytes-per-s", type=float, default=None)
    a = p.parse_args(argv)
    faults = ServerFaults(
        a.fail_at_shard,
        a.orphans_on_stop,
        a.stubborn_orphans,
        a.defunct_worker,
        lagging_rank=a.lagging_rank,
    )
    settings = ServerSettings(
        state_dir=a.state_dir,
        port=a.port,
        model=a.model,
        served_model_name=a.served_model_name,
        load_seconds=a.load_seconds,
        load_started_s=a.load_started_s,
        shards=a.shards,
        tp=a.tp,
        seed=a.seed,
        weights_bytes_per_gpu=a.weights_bytes_per_gpu,
        kv_bytes_per_gpu=a.kv_bytes_per_gpu,
        max_model_len=a.max_model_len,
        prefill_tok_s=a.prefill_tok_s,
        decode_step_s=a.decode_step_s,
        decode_alpha=a.decode_alpha,
        max_batch=a.max_batch,
        max_num_batched_tokens=a.max_num_batched_tokens,
        log_interval_s=a.log_interval_s,
        time_scale=a.time_scale if a.time_scale > 0 else 1.0,
        prefix_caching=a.enable_prefix_caching,
        **engine_settings(a),
        faults=faults,
        shard_dir=a.shard_dir,
        disk_bytes_per_s=a.disk_bytes_per_s,
    )
    settings = apply_vllm_flags(settings, a)
    return settings, RuntimeFaults(a.http_5xx_rate, a.cut_stream_after_tokens)


def main(argv: list[str] | None = None) -> int:
    settings, faults = parse_args(argv)

    async def run() -> int:
        return await SimServer(settings, faults).serve()

    return asyncio.run(run())


if __name__ == "__main__":
    sys.exit(main())
