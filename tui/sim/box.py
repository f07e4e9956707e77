"""SimBox: the whole simulated GPU server in one object, for tests, the demo and the CLI.

It owns a state dir, a `SimUnit` (the `vllm-kimi-k25-int4.service` unit that
runs `python -m tui.sim.server`) and a `SimGpuModel`. Nothing here needs an
event loop: `start()`, `stop()`, `restart()` and `snapshot()` return quickly
(a snapshot reads a few small files), `wait_until_active()` blocks and
belongs in a worker thread; `close()` blocks up to a few seconds and ends
every process the box ever started, orphans included.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tui.gpu.model import GpuBoxSnapshot
from tui.sim import spec
from tui.sim.deployment import dropin_dir, dropin_words
from tui.sim.gpu_model import SimGpuModel
from tui.sim.procs import is_alive
from tui.sim.sweep import PREFIX, claim, sweep_stale
from tui.sim.unit import SimUnit


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True, slots=True)
class SimServerOptions:
    """Server flags the box passes on each start (see `python -m tui.sim.server --help`)."""

    model: str = spec.MODEL_NAME
    served_model_name: str = spec.SERVED_MODEL_NAME
    shards: int = spec.MODEL_SHARDS
    tp: int = spec.TENSOR_PARALLEL
    prefill_tok_s: float | None = None
    decode_step_s: float | None = None
    decode_alpha: float | None = None
    max_batch: int | None = None
    max_num_batched_tokens: int | None = None
    log_interval_s: float | None = None
    kv_bytes_per_gpu: int | None = None
    time_scale: float | None = None
    prefix_caching: bool = False
    fail_at_shard: int | None = None
    orphans_on_stop: int = 0
    stubborn_orphans: bool = False
    defunct_worker: bool = False
    lagging_rank: int | None = None  # see tui.sim.spec.ServerFaults
    http_5xx_rate: float | None = None
    cut_stream_after_tokens: int | None = None
    # Slow-disk mode: real shard files (tui.sim.shards.make_shards) read during the
    # weights phase, the part not in the page cache at this many bytes per second.
    shard_dir: str | None = None
    disk_bytes_per_s: float | None = None
    extra_args: tuple[str, ...] = field(default=())


class SimBox:
    """An 8-GPU box with a simulated vLLM service; use as a context manager."""

    def __init__(
        self,
        state_dir: Path | str | None = None,
        seed: int = 0,
        load_seconds: float = 45.0,
        port: int | None = None,
        options: SimServerOptions | None = None,
        restart: str = "no",
        gpu_churn: bool = False,
        gpu_count: int = spec.GPU_COUNT,
        unit_name: str = spec.UNIT_NAME,
    ) -> None:
        self._own_dir = state_dir is None
        if self._own_dir:
            sweep_stale()  # dirs left by a console that was killed (SIGKILL) before closing
        self.state_dir = Path(state_dir or tempfile.mkdtemp(prefix=PREFIX))
        if self._own_dir:
            claim(self.state_dir)
        (self.state_dir / "gpu").mkdir(parents=True, exist_ok=True)
        self.seed = seed
        self.load_seconds = load_seconds
        self.port = port or free_port()
        self.options = options or SimServerOptions()
        self.unit = SimUnit(unit_name, self.state_dir, self.port, self.server_argv, restart)
        self.gpus = SimGpuModel(self.state_dir, seed, gpu_count=gpu_count, churn=gpu_churn)
        self._snapshot_lock = threading.Lock()
        self._load_started_s: float | None = None  # the next start's, once (see start)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        """The server's log in vLLM's format (what journalctl -u would show)."""
        return self.state_dir / "server.log"

    def server_argv(self) -> list[str]:
        o = self.options
        argv = [
            sys.executable,
            "-m",
            "tui.sim.server",
            "--state-dir",
            str(self.state_dir),
            "--port",
            str(self.port),
            "--model",
            o.model,
            "--served-model-name",
            o.served_model_name,
            "--load-seconds",
            str(self.load_seconds),
            "--shards",
            str(o.shards),
            "--tp",
            str(o.tp),
            "--seed",
            str(self.seed),
        ]
        if self._load_started_s is not None:
            argv += ["--load-started-s", str(self._load_started_s)]
        optional = {
            "--prefill-tok-s": o.prefill_tok_s,
            "--decode-step-s": o.decode_step_s,
            "--decode-alpha": o.decode_alpha,
            "--max-batch": o.max_batch,
            "--max-num-batched-tokens": o.max_num_batched_tokens,
            "--log-interval-s": o.log_interval_s,
            "--kv-bytes-per-gpu": o.kv_bytes_per_gpu,
            "--time-scale": o.time_scale,
            "--fail-at-shard": o.fail_at_shard,
            "--http-5xx-rate": o.http_5xx_rate,
            "--cut-stream-after-tokens": o.cut_stream_after_tokens,
            "--shard-dir": o.shard_dir,
            "--disk-bytes-per-s": o.disk_bytes_per_s,
            "--lagging-rank": o.lagging_rank,
        }
        for flag, value in optional.items():
            if value is not None:
                argv += [flag, str(value)]
        if o.orphans_on_stop:
            argv += ["--orphans-on-stop", str(o.orphans_on_stop)]
        if o.stubborn_orphans:
            argv.append("--stubborn-orphans")
        if o.defunct_worker:
            argv.append("--defunct-worker")
        if o.prefix_caching:
            argv.append("--enable-prefix-caching")
        flags, env = dropin_words(self.dropin_dir)
        argv += [*o.extra_args, *flags]
        return ["env", *env, *argv] if env else argv

    @property
    def dropin_dir(self) -> Path:
        """The unit's drop-in folder: read at each start (tui.sim.deployment)."""
        return dropin_dir(self.state_dir, self.unit.name)

    # -- service --------------------------------------------------------------
    def start(self, load_started_s: float | None = None) -> None:
        """Start the service; `load_started_s` (epoch s, past) resumes a load that began
        then, as a box found mid-load is (its later restarts load from zero)."""
        self._load_started_s = load_started_s
        try:
            self.unit.start(started_s=load_started_s)
        finally:
            self._load_started_s = None

    def stop(self, orphans: int | None = None) -> None:
        self.unit.stop(orphans=orphans)

    def restart(self) -> None:
        self.unit.restart()

    def wait_until_active(self, timeout_s: float = 120.0) -> str:
        """Block until the unit is active or failed; returns the state."""
        return self.unit.wait_for_state(("active", "failed"), timeout_s)

    def wait_until_ready(self, timeout_s: float = 120.0) -> bool:
        """Block until the server answers /health (its load done); False when it never did."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.unit.wait_for_state(("active", "failed"), 0.0) == "failed":
                return False
            try:
                with urllib.request.urlopen(f"{self.base_url}/health", timeout=1.0) as answer:
                    if answer.status == 200:
                        return True
            except OSError:  # not listening yet (URLError is an OSError)
                pass
            time.sleep(0.1)
        return False

    def snapshot(self) -> GpuBoxSnapshot:
        """Thread-safe: the GPU model's smoothing state is shared between callers."""
        with self._snapshot_lock:
            return self.gpus.snapshot()

    # -- processes ------------------------------------------------------------
    def started_processes(self) -> list[tuple[int, int, str]]:
        """(pid, start ticks, role) of every simulator process this box started, alive or not."""
        found: list[tuple[int, int, str]] = []
        with contextlib.suppress(FileNotFoundError):
            for line in (self.state_dir / "pids.log").read_text().splitlines():
                pid, ticks, role = line.split(" ", 2)
                if ticks.isdigit():
                    found.append((int(pid), int(ticks), role))
        return found

    def live_processes(self) -> list[tuple[int, str]]:
        return [
            (pid, role) for pid, ticks, role in self.started_processes() if is_alive(pid, ticks)
        ]

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the service and end every process the box started, orphans included."""
        self.unit.stop()
        self.unit.wait_for_state(("inactive", "failed"), timeout_s)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid, ticks, _role in self.started_processes():
                if is_alive(pid, ticks):
                    with contextlib.suppress(OSError):
                        os.kill(pid, sig)
            deadline = time.monotonic() + timeout_s / 2
            while self.live_processes() and time.monotonic() < deadline:
                time.sleep(0.05)
        if self._own_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self) -> SimBox:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
