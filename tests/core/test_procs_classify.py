"""Classification rules on /proc records (the helper's pure functions)."""

from __future__ import annotations

from pathlib import Path

from tui.procs import ENGINE_PATTERNS, helper

UNIT = "vllm-kimi-k25-int4.service"


def info(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "pid": 700,
        "comm": "VLLM::Worker_TP0",
        "state": "S",
        "ppid": 1,
        "kthread": False,
        "cmdline": ["VLLM::Worker_TP0"],
        "cgroup": "/user.slice/user-0.slice/session-3.scope",
        "uid": 0,
        "user": "root",
    }
    return {**base, **changes}


def classify(
    record: dict[str, object], parent: dict[str, object] | None = None, **kw: object
) -> str:
    args = {"unit": UNIT, "unit_active": True, "patterns": ENGINE_PATTERNS, **kw}
    return helper.classify(record, parent, **args)[0]  # type: ignore[arg-type]


def test_unit_cgroup_decides_service_or_leftover() -> None:
    in_unit = info(cgroup=f"/system.slice/{UNIT}", ppid=4000)
    assert classify(in_unit) == "service"
    assert classify(in_unit, unit_active=False) == "leftover"
    assert classify(in_unit, unit_active=None) == "service"  # unknown state: not offered
    assert classify(info(cgroup=f"/system.slice/{UNIT}x", ppid=4000)) == "foreign"


def proven() -> tuple[str, None]:
    return "started by the service (recorded pid 700)", None


def test_orphans_matching_the_patterns_are_suspects_without_a_proof() -> None:
    """A name proves nothing: an orphan named like a worker is a suspect until ownership is
    proven (before, every such orphan was a leftover, killed by `kill --leftovers --yes`)."""
    assert classify(info()) == "suspect"  # parent is PID 1, no proof
    _kind, reason = helper.classify(info(), None, UNIT, True, ENGINE_PATTERNS)
    assert "not proven the service's" in reason
    assert classify(info(), proof=proven) == "leftover"
    engine = info(cmdline=["/opt/venv/bin/python", "-m", "sglang.launch_server", "--tp", "8"])
    assert classify(engine) == "suspect" and classify(engine, proof=proven) == "leftover"
    tini = info(pid=1, comm="tini", cmdline=["tini", "--"])
    assert classify(info(ppid=55), tini, proof=proven) == "leftover"
    user_systemd = info(pid=55, comm="systemd", cmdline=["/lib/systemd/systemd", "--user"])
    assert classify(info(ppid=55), user_systemd, proof=proven) == "leftover"
    bash = info(pid=55, comm="bash", cmdline=["bash"])
    assert classify(info(ppid=55), bash, proof=proven) == "foreign"
    assert classify(info(ppid=55), info(pid=55, comm="x"), subreaper_pids={55}) == "suspect"
    assert classify(info(cmdline=["python3", "train.py"], comm="python3")) == "foreign"


def test_defunct_and_kernel_threads() -> None:
    kind, reason = helper.classify(info(state="Z", ppid=812), None, UNIT, True, ENGINE_PATTERNS)
    assert kind == "defunct" and "812" in reason
    assert classify(info(kthread=True, cmdline=[])) == "foreign"


def test_refusal_of_other_users_unless_root() -> None:
    target = {"pid": 700, "klass": "leftover"}
    other = info(uid=1001, user="alice")
    assert "alice" in (helper.refusal(target, other, set(), 1000, set()) or "")
    assert helper.refusal(target, other, set(), 0, set()) is None
    assert "kernel thread" in (helper.refusal(target, info(kthread=True), set(), 0, set()) or "")


def test_stat_parsing_survives_odd_process_names() -> None:
    text = "123 (a) b (c) S 1 123 123 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 98765 0 0"
    comm, state, ppid, sid, _flags, ticks = helper.parse_stat(text)
    assert (comm, state, ppid, sid, ticks) == ("a) b (c", "S", 1, 123, 98765)


def fake_process(proc: Path, pid: int, ppid: int, cmdline: list[str]) -> dict[str, object]:
    """One /proc/PID entry with just what read_process needs; returns the record it reads."""
    folder = proc / str(pid)
    folder.mkdir(parents=True)
    comm = cmdline[0].rsplit("/", 1)[-1][:15]
    # field 3 (state) .. field 22 (start time): 20 fields after the comm
    fields = ["S", str(ppid), str(pid), str(pid), "0", "-1", "0", *["0"] * 12, str(1000 + pid)]
    (folder / "stat").write_text(f"{pid} ({comm}) {' '.join(fields)}\n")
    (folder / "cmdline").write_bytes(b"\0".join(part.encode() for part in cmdline) + b"\0")
    record = helper.read_process(pid, str(proc))
    assert record is not None
    return record


def test_workers_under_an_orphaned_engine_core_are_leftovers(tmp_path: Path) -> None:
    """vLLM's workers are children of VLLM::EngineCore: when the API server dies only the
    EngineCore is reparented, and its workers (which hold the GPU memory) must follow it."""
    proc = tmp_path / "proc"
    fake_process(proc, 1, 0, ["/sbin/init"])
    core = fake_process(proc, 40, 1, ["VLLM::EngineCore"])
    worker = fake_process(proc, 41, 40, ["VLLM::Worker_TP0"])
    above = helper.orphaned_ancestor(core, ENGINE_PATTERNS, proc=str(proc))
    assert above is not None and above["pid"] == 40
    kind, reason = helper.classify(worker, core, None, None, ENGINE_PATTERNS, orphan_above=above)
    assert kind == "suspect" and "child of orphan 40" in reason  # no proof it is the service's
    kind, reason = helper.classify(
        worker, core, None, None, ENGINE_PATTERNS, orphan_above=above, proof=proven
    )
    assert kind == "leftover" and "child of orphan 40" in reason
    # A process that does not match the patterns stays foreign under the same orphan.
    stranger = fake_process(proc, 42, 40, ["python3", "train.py"])
    assert helper.classify(stranger, core, None, None, ENGINE_PATTERNS, orphan_above=above)[0] == (
        "foreign"
    )
    # Through a parent that does not match, the chain is broken.
    shell = fake_process(proc, 50, 1, ["bash"])
    assert helper.orphaned_ancestor(shell, ENGINE_PATTERNS, proc=str(proc)) is None


def test_workers_of_a_live_api_server_are_not_leftovers_even_if_it_was_nohupped(
    tmp_path: Path,
) -> None:
    proc = tmp_path / "proc"
    fake_process(proc, 1, 0, ["/sbin/init"])
    api = fake_process(proc, 30, 1, ["/opt/venv/bin/python", "/opt/venv/bin/vllm", "serve", "m"])
    core = fake_process(proc, 31, 30, ["VLLM::EngineCore"])
    worker = fake_process(proc, 32, 31, ["VLLM::Worker_TP0"])
    assert helper.orphaned_ancestor(core, ENGINE_PATTERNS, proc=str(proc)) is None
    assert helper.orphaned_ancestor(api, ENGINE_PATTERNS, proc=str(proc)) is None
    above = helper.orphaned_ancestor(core, ENGINE_PATTERNS, proc=str(proc))
    assert helper.classify(worker, core, None, None, ENGINE_PATTERNS, orphan_above=above)[0] == (
        "foreign"
    )
