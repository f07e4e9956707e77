"""The simulated box with real processes: workers, orphans, crashes, GPU memory."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.sim_fixtures import FAST_OPTIONS
from tui.sim.box import SimBox, SimServerOptions
from tui.sim.gpu_source import SimGpuSource
from tui.sim.procs import is_alive, process_state

Factory = Callable[..., SimBox]


def wait_until(predicate: Callable[[], object], timeout_s: float = 20.0) -> object:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"condition not met within {timeout_s} s")


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()


def ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def active_box(factory: Factory, options: SimServerOptions = FAST_OPTIONS) -> SimBox:
    box = factory(options)
    box.start()
    assert box.wait_until_active(90) == "active", box.log_path.read_text()[-2000:]
    return box


def test_serving_tree_has_vllm_process_names_and_gpu_memory(sim_box_factory: Factory) -> None:
    box = active_box(sim_box_factory)
    show = box.unit.show()
    assert show["ActiveState"] == "active" and show["SubState"] == "running"
    main_pid = int(show["MainPID"])
    roles = dict((role, pid) for pid, role in box.live_processes())
    engine = roles["VLLM::EngineCore"]
    assert cmdline(engine) == "VLLM::EngineCore" and ppid(engine) == main_pid
    for rank in range(8):
        worker = roles[f"VLLM::Worker_TP{rank}"]
        assert cmdline(worker) == f"VLLM::Worker_TP{rank}" and ppid(worker) == engine
    snapshot = box.snapshot()
    assert snapshot.simulated and snapshot.source == "simulated" and snapshot.gpu_count == 8
    for sample in snapshot.samples:
        assert len(sample.processes) == 1
        # its worker's SM share is the GPU's utilization: the one process doing work on it
        assert sample.processes[0].sm_util_percent == sample.utilization_gpu_pct
        # weights (547 GB / 8) + KV cache + graphs + context: most of the 96 GB board
        assert 80e9 < (sample.memory_used_bytes or 0) < (sample.memory_total_bytes or 0)


def test_clean_stop_ends_the_whole_tree(sim_box_factory: Factory) -> None:
    box = active_box(sim_box_factory)
    started = time.monotonic()
    box.stop()
    assert box.unit.wait_for_state("inactive", 15) == "inactive"
    wait_until(lambda: not box.live_processes(), 10)
    assert time.monotonic() - started < 8  # ~2 s on an idle machine
    assert not list((box.state_dir / "gpu").glob("*.json"))
    assert all(not s.processes and s.memory_used_bytes == 0 for s in box.snapshot().samples)


def test_orphans_survive_stop_hold_memory_and_go_on_sigterm(sim_box_factory: Factory) -> None:
    box = active_box(sim_box_factory)
    box.stop(orphans=2)
    assert box.unit.wait_for_state("inactive", 15) == "inactive"
    wait_until(lambda: len(box.live_processes()) == 2, 10)
    orphans = dict((role, pid) for pid, role in box.live_processes())
    assert set(orphans) == {"VLLM::Worker_TP0", "VLLM::Worker_TP1"}
    for pid in orphans.values():
        # Reparented: to PID 1, or to a subreaper, never to the simulator's own processes.
        parent = ppid(pid)
        assert parent == 1 or parent not in {p for p, _ticks, _role in box.started_processes()}
    samples = box.snapshot().samples
    held = {s.index: s.memory_used_bytes for s in samples}
    assert held[0] > 60e9 and held[1] > 60e9 and held[2] == 0
    assert [p.sm_util_percent for s in samples for p in s.processes] == [0.0, 0.0]  # idle
    for pid in orphans.values():
        os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not any(is_alive(pid) for pid in orphans.values()), 10)
    assert all(s.memory_used_bytes == 0 for s in box.snapshot().samples)


def test_stubborn_orphan_needs_sigkill(sim_box_factory: Factory) -> None:
    options = SimServerOptions(**{**_fields(FAST_OPTIONS), "stubborn_orphans": True})
    box = active_box(sim_box_factory, options)
    box.stop(orphans=1)  # written to <state>/orphans-on-stop, read by the server at stop time
    # The API server may still be ending when the orphan is already up: wait for the orphan alone.
    wait_until(lambda: [r for _, r in box.live_processes()] == ["VLLM::Worker_TP0"], 15)
    [(pid, role)] = box.live_processes()
    assert role == "VLLM::Worker_TP0"
    os.kill(pid, signal.SIGTERM)
    time.sleep(1.0)
    assert is_alive(pid), "a stubborn orphan ignores SIGTERM"
    assert box.snapshot().samples[0].memory_used_bytes
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not is_alive(pid), 10)
    assert box.snapshot().samples[0].memory_used_bytes == 0, "a dead pid's file counts for nothing"


def test_fail_at_shard_logs_the_fp8_traceback_and_unit_fails(sim_box_factory: Factory) -> None:
    options = SimServerOptions(**{**_fields(FAST_OPTIONS), "fail_at_shard": 5})
    box = sim_box_factory(options)
    box.start()
    assert box.wait_until_active(90) == "failed"
    show = box.unit.show()
    assert show["Result"] == "exit-code" and show["ExecMainStatus"] == "1"
    log = box.log_path.read_text()
    assert (
        "ValueError: The output_size of gate's and up's weight = 192 is not divisible by "
        "weight quantization block_n = 128." in log
    )
    assert "Traceback (most recent call last):" in log and "EngineCore failed to start." in log
    # Shard 5 is the one that fails: four loaded, the fifth never reported.
    assert "4/16" in log and "5/16" not in log and "Application startup complete" not in log
    wait_until(lambda: not box.live_processes(), 10)


def test_defunct_worker_is_a_real_zombie(sim_box_factory: Factory) -> None:
    options = SimServerOptions(**{**_fields(FAST_OPTIONS), "defunct_worker": True})
    box = active_box(sim_box_factory, options)
    engine = next(pid for pid, role in box.live_processes() if role == "VLLM::EngineCore")
    children = Path(f"/proc/{engine}/task/{engine}/children").read_text().split()
    assert any(process_state(int(child)) == "Z" for child in children)


def test_restart_on_failure_counts_restarts(sim_box_factory: Factory) -> None:
    options = SimServerOptions(**{**_fields(FAST_OPTIONS), "fail_at_shard": 1})
    box = sim_box_factory(options, restart="on-failure")
    box.unit.restart_s = 0.2
    box.start()
    wait_until(lambda: int(box.unit.show()["NRestarts"]) >= 1, 60)
    box.stop()


async def test_sim_gpu_source_statics_and_determinism(tmp_path: Path) -> None:
    box_a, box_b = SimBox(tmp_path / "a", seed=3), SimBox(tmp_path / "b", seed=3)
    try:
        source = SimGpuSource(box_a)
        snapshot = await source.sample()
        await source.aclose()
        other = box_b.snapshot()
    finally:
        box_a.close()
        box_b.close()
    assert source.name == "simulated" and snapshot.simulated
    assert [s.uuid for s in snapshot.statics] == [s.uuid for s in other.statics]
    assert [s.temperature_c for s in snapshot.samples] == [s.temperature_c for s in other.samples]
    first = snapshot.statics[0]
    assert first.name == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert first.compute_capability == "12.0" and first.power_limit_w == 600.0
    assert [s.numa_node for s in snapshot.statics] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert snapshot.topology[0][3] == "NODE" and snapshot.topology[0][4] == "SYS"
    assert snapshot.topology[5][5] == "X"
    idle = snapshot.samples[0]
    assert idle.utilization_gpu_pct == 0 and 25 < (idle.temperature_c or 0) < 40
    assert (idle.power_w or 0) < 60 and idle.memory_used_bytes == 0


def _fields(options: SimServerOptions) -> dict[str, object]:
    return {name: getattr(options, name) for name in options.__slots__}  # type: ignore[attr-defined]


def test_server_stops_its_whole_tree_when_its_box_process_dies(tmp_path: Path) -> None:
    """A console killed with SIGKILL cannot stop its box: the server notices and stops itself."""
    import signal as _signal
    import subprocess
    import sys
    import time

    script = (
        "import sys, time\n"
        "from tui.sim.box import SimBox, SimServerOptions\n"
        f"box = SimBox({str(tmp_path / 'box')!r}, load_seconds=1.0, "
        "options=SimServerOptions(shards=4, orphans_on_stop=2))\n"
        "box.start()\n"
        "assert box.wait_until_active(60) == 'active'\n"
        "print('active', flush=True)\n"
        "time.sleep(600)\n"
    )
    console = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert console.stdout is not None and console.stdout.readline().strip() == "active"
        started = SimBox(tmp_path / "box").started_processes()
        assert any(role == "APIServer" for _, _, role in started)
        console.send_signal(_signal.SIGKILL)
        console.wait(timeout=10)
        deadline = time.monotonic() + 30
        viewer = SimBox(tmp_path / "box")
        while viewer.live_processes() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert viewer.live_processes() == []  # no orphans either: nobody is left to clean up
    finally:
        console.kill()
        SimBox(tmp_path / "box").close()
