"""Without a proof of ownership, no process is ever a leftover (generated /proc trees).

Each example writes a small /proc tree (init, a parent, the process under test) with a
generated user, cgroup, parent, command shape, working directory and mapped libraries, and a
generated
classification context (the unit, its state, its User= and WorkingDirectory=, the
service's record of what it started). Both listings, the GPU one and the wider one, run
over it through the helper; whatever they call a leftover must carry a proof the test
computes on its own.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tui.procs import ENGINE_PATTERNS, helper

UNIT = "vllm-test.service"
PID, PARENT, TICKS = 700, 40, 5000
CGROUPS = (
    f"/system.slice/{UNIT}",
    "/system.slice/other.service",
    "/user.slice/user-0.slice/session-3.scope",
    "",
)
COMMANDS = (
    ["VLLM::Worker_TP0"],
    ["VLLM::EngineCore"],
    ["/opt/vllm/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"],
    ["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server"],
    ["sleep", "900"],
    ["python3", "train.py"],
)
PARENTS = (None, ["bash"], ["tini", "--"], ["VLLM::EngineCore"])  # None: the parent is PID 1
UIDS = (0, 65534, 1000)
DIRS = ("/opt/vllm", "/tmp", "/")
# A worker of a venv made with symlinks runs /usr/bin/python3.x yet maps the venv's torch.
MAPS = (
    (),
    ("/opt/vllm/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so",),
    ("/opt/vllm/venv2/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so",),
    ("/usr/lib/x86_64-linux-gnu/libc.so.6", "[heap]"),
)


def write_process(
    proc: Path,
    pid: int,
    ppid: int,
    cmdline: list[str],
    *,
    uid: int = 0,
    cgroup: str = "",
    cwd: str = "/",
    ticks: int = TICKS,
    maps: tuple[str, ...] = (),
) -> None:
    folder = proc / str(pid)
    folder.mkdir(parents=True)
    comm = cmdline[0].rsplit("/", 1)[-1][:15]
    fields = ["S", str(ppid), str(pid), str(pid), "0", "-1", "0", *["0"] * 12, str(ticks)]
    (folder / "stat").write_text(f"{pid} ({comm}) {' '.join(fields)}\n")
    (folder / "cmdline").write_bytes(b"\0".join(part.encode() for part in cmdline) + b"\0")
    (folder / "status").write_text(f"Name:\t{comm}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
    (folder / "cgroup").write_text(f"0::{cgroup}\n")
    os.symlink(cwd, folder / "cwd")
    os.symlink("/usr/bin/python3.11", folder / "exe")
    lines = [
        f"7f00{n:08x}-7f01{n:08x} r-xp 00000000 08:01 {n + 1}   {path}"
        for n, path in enumerate(maps)
    ]
    (folder / "maps").write_text(
        "".join(line + "\n" for line in lines) + "7f02-7f03 rw-p 0 0:0 0 \n"
    )


def user_uid(name: str | None) -> int | None:
    return {"root": 0, "nobody": 65534}.get(name) if name is not None else None


process_attributes = st.fixed_dictionaries(
    {
        "uid": st.sampled_from(UIDS),
        "cgroup": st.sampled_from(CGROUPS),
        "parent": st.sampled_from(PARENTS),
        "cmdline": st.sampled_from(COMMANDS),
        "cwd": st.sampled_from(DIRS),
        "maps": st.sampled_from(MAPS),
    }
)
contexts = st.fixed_dictionaries(
    {
        "unit": st.sampled_from((UNIT, None)),
        "unit_active": st.sampled_from((True, False, None)),
        "unit_user": st.sampled_from((None, "root", "nobody")),
        "unit_dir": st.sampled_from((None, "/opt/vllm", "/")),
        "unit_venv": st.sampled_from((None, "/opt/vllm/venv")),
        "owned": st.sampled_from(((), ((PID, TICKS),), ((PID, TICKS + 1),), ((PARENT, 9),))),
        "main_pid": st.sampled_from((None, PARENT)),
    }
)


def proven(attrs: dict, ctx: dict) -> bool:  # type: ignore[type-arg]
    """The test's own reading of the rules: which proofs of ownership hold."""
    unit = ctx["unit"]
    if unit and unit in attrs["cgroup"].split("/") and ctx["unit_active"] is False:
        return True  # in a stopped unit's cgroup
    records = {tuple(record) for record in ctx["owned"]}
    if (PID, TICKS) in records or (attrs["parent"] is not None and (PARENT, 9) in records):
        return True  # recorded by the service (itself, or its live parent)
    uid = user_uid(ctx["unit_user"])
    if uid is None or uid != attrs["uid"]:
        return False
    if ctx["unit_dir"] and attrs["cwd"].rstrip("/") == ctx["unit_dir"].rstrip("/"):
        return True
    venv = ctx["unit_venv"]
    used = (attrs["cmdline"][0], *attrs["maps"])
    return bool(venv) and any(path.startswith(venv + "/") for path in used)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(attrs=process_attributes, ctx=contexts)
# A retitled worker of a venv made with symlinks, for a unit with no WorkingDirectory=.
@example(
    attrs={
        "uid": 0,
        "cgroup": "",
        "parent": None,
        "cmdline": COMMANDS[1],
        "cwd": "/",
        "maps": MAPS[1],
    },
    ctx={
        "unit": UNIT,
        "unit_active": False,
        "unit_user": "root",
        "unit_dir": None,
        "unit_venv": "/opt/vllm/venv",
        "owned": (),
        "main_pid": None,
    },
)
def test_no_leftover_without_a_proof_of_ownership(attrs: dict, ctx: dict) -> None:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as folder:
        proc = Path(folder)
        write_process(proc, 1, 0, ["/sbin/init"], ticks=1)
        ppid = 1
        if attrs["parent"] is not None:
            write_process(proc, PARENT, 1, attrs["parent"], ticks=9)
            ppid = PARENT
        write_process(
            proc,
            PID,
            ppid,
            attrs["cmdline"],
            uid=attrs["uid"],
            cgroup=attrs["cgroup"],
            cwd=attrs["cwd"],
            maps=attrs["maps"],
        )
        request = {
            **ctx,
            "owned": [list(record) for record in ctx["owned"]],
            "patterns": list(ENGINE_PATTERNS),
            "hints": [{"pid": PID, "gpu_index": 0, "used_memory_bytes": 1 << 30}],
            "device_prefix": str(proc / "no-device"),
        }
        listed = helper.list_processes(request, str(proc))["processes"]
        wide = helper.wider_leftovers({**request, "wide": True}, set(), str(proc))
        for found in [*listed, *wide]:
            if found["pid"] != PID:
                continue
            if found["klass"] == "leftover":
                assert proven(attrs, ctx), found["reason"]
            if found["klass"] == "suspect":
                assert not proven(attrs, ctx), found["reason"]
                assert "not proven the service's" in found["reason"]


def test_a_venv_linked_to_a_system_prefix_proves_nothing(tmp_path: Path) -> None:
    """/opt/vllm/venv -> /usr: every program maps /usr's libc; that proves no process."""
    proc = tmp_path / "proc"
    write_process(proc, 1, 0, ["/sbin/init"], ticks=1)
    write_process(proc, PID, 1, ["VLLM::Worker_TP0"], maps=("/usr/lib/x86_64-linux-gnu/libc.so.6",))
    link = tmp_path / "venv"
    link.symlink_to("/usr", target_is_directory=True)
    request = {"unit": UNIT, "unit_active": False, "unit_user": "root", "unit_venv": str(link)}
    info = helper.read_process(PID, str(proc))
    assert info is not None
    proof, missing = helper.ownership(info, request, str(proc))
    assert proof is None and f"not run from {link}" in (missing or "")
