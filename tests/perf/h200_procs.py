"""The leftover killer on a real NVIDIA GPU: an orphaned CUDA process, found and ended.

    python tests/perf/h200_procs.py [OUT_DIR]      (needs torch and a GPU)

1. reads GPU 0's idle used memory (NVML);
2. starts a CUDA process holding 6 GiB, named like a vLLM worker, and orphans it
   (setsid, its parent exits) so it is reparented the way a surviving worker is; it
   runs from the folder the profile's unit names as WorkingDirectory= (a stand-in
   `systemctl show` on PATH answers for the made-up unit, as in the tests), the proof
   that makes it the service's leftover rather than a suspect;
3. runs `servedeck procs --json` and renders the console's Processes pane to
   OUT_DIR/procs-h200.svg while the leftover is listed;
4. runs `servedeck kill --leftovers --yes`;
5. polls NVML until GPU 0's used memory is back at the idle level and prints the figures.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pynvml  # noqa: E402

from tests.support.systemctl_standin import (  # noqa: E402
    unit_show_text,
    unit_user_field,
    write_systemctl,
)

HOLD_GIB = 6
MIB = 1024**2
UNIT = "servedeck-procs-probe.service"
HOLDER = (
    "import sys, time, setproctitle, torch\n"
    "setproctitle.setproctitle('VLLM::Worker_TP0')  # what vLLM's workers call themselves\n"
    f"x = torch.empty({HOLD_GIB} << 30, dtype=torch.uint8, device='cuda')\n"
    "x.fill_(1); torch.cuda.synchronize()\n"
    "open(sys.argv[1], 'w').write('ready')\n"
    "time.sleep(1800)\n"
)


def process_running(pid: int) -> bool:
    """True while pid exists and is not a zombie waiting for its (new) parent to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


def gpu0_used_bytes() -> int:
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    return int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)


def run_cli(
    args: list[str], profile: Path, timeout_s: float = 180
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run(
        [sys.executable, "-m", "tui", *args, "--profile", str(profile)],
        capture_output=True, text=True, timeout=timeout_s, cwd=ROOT, env=env,
    )  # fmt: skip


def spawn_orphan(folder: Path) -> int:
    """Double fork through `setsid -f`: the holder's parent exits at once."""
    script = folder / "holder.py"
    script.write_text(HOLDER)
    ready = folder / "ready"
    pid_file = folder / "pid"
    launcher = (
        f"setsid -f bash -c 'echo $$ > {pid_file}; "
        f"exec {sys.executable} {script} {ready}' </dev/null >{folder}/holder.log 2>&1"
    )
    subprocess.run(["bash", "-c", launcher], check=True, cwd=folder)
    deadline = time.monotonic() + 120
    while not ready.exists():
        if time.monotonic() > deadline:
            log = (folder / "holder.log").read_text(errors="replace")[-2000:]
            raise SystemExit(f"h200_procs: the CUDA holder did not become ready in 120 s:\n{log}")
        time.sleep(0.2)
    return int(pid_file.read_text())


async def render_procs_pane(profile: Path, out: Path) -> None:
    from tui.app import ServedeckApp
    from tui.compose import open_deck
    from tui.core.profile_store import load_profile
    from widgets.procs_pane import ProcsPane

    loaded = load_profile(str(profile))
    app = ServedeckApp(loaded, open_deck(loaded))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause(3.0)
        await pilot.press("3")
        for _ in range(60):
            await pilot.pause(0.5)
            if app.query_one(ProcsPane).processes:
                break
        await pilot.pause(0.5)
        app.save_screenshot(filename="procs-h200.svg", path=str(out))


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "h200-out").resolve()
    out.mkdir(parents=True, exist_ok=True)
    pynvml.nvmlInit()
    folder = Path(tempfile.mkdtemp(prefix="servedeck-procs-"))
    profile = folder / "h200-local.toml"
    profile.write_text(
        'description = "H200 verification"\n[host]\nkind = "local"\n'
        f'[service]\nunit = "{UNIT}"\nprocess_patterns = ["VLLM::*"]\n'
    )
    # The stopped unit the worker stands for: run by this user from this folder, ExecStart=
    # this interpreter's `vllm serve` (the CLI and the pane run the stand-in from PATH).
    vllm = str(Path(sys.executable).parent / "vllm")
    show = unit_show_text(UNIT, "inactive", unit_user_field(), str(folder), (vllm, "serve"))
    os.environ["PATH"] = f"{write_systemctl(folder, show)}{os.pathsep}{os.environ['PATH']}"
    idle = gpu0_used_bytes()
    pid = spawn_orphan(folder)
    time.sleep(1.0)
    held = gpu0_used_bytes()
    stat = Path(f"/proc/{pid}/stat").read_text()
    ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
    parent_comm = Path(f"/proc/{ppid}/comm").read_text().strip() if ppid > 0 else "?"
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    print(f"orphan pid {pid}, parent {ppid} ({parent_comm}), cmdline {cmdline}")
    print(f"GPU 0 used: idle {idle / MIB:,.0f} MiB, with the orphan {held / MIB:,.0f} MiB")

    procs = run_cli(["procs", "--json"], profile)
    (out / "procs.json").write_text(procs.stdout + procs.stderr)
    listing = json.loads(procs.stdout) if procs.returncode == 0 else {"processes": []}
    mine = [p for p in listing["processes"] if p["identity"]["pid"] == pid]
    klass = mine[0]["klass"] if mine else "missing"
    reason = mine[0]["reason"] if mine else ""
    print(
        f"servedeck procs --json: exit {procs.returncode}, the orphan is {klass!r} ({reason})"
        + (
            f", {mine[0]['gpu_memory_bytes'] / MIB:,.0f} MiB"
            if mine and mine[0]["gpu_memory_bytes"]
            else ""
        )
    )
    asyncio.run(render_procs_pane(profile, out))
    print(f"wrote {out / 'procs-h200.svg'}")

    started = time.monotonic()
    if klass == "leftover":
        kill = run_cli(["kill", "--leftovers", "--yes", "--timeout", "15"], profile)
    else:
        kill = run_cli(["kill", str(pid), "--yes", "--confirm-foreign", str(pid)], profile)
    (out / "kill.txt").write_text(kill.stdout + kill.stderr)
    print(f"servedeck kill: exit {kill.returncode}\n{kill.stdout}{kill.stderr}")
    after = gpu0_used_bytes()
    deadline = time.monotonic() + 30
    while after > idle + 64 * MIB and time.monotonic() < deadline:
        time.sleep(0.2)
        after = gpu0_used_bytes()
    elapsed = time.monotonic() - started
    alive = process_running(pid)
    print(
        f"GPU 0 used after the kill: {after / MIB:,.0f} MiB (idle {idle / MIB:,.0f} MiB), "
        f"{elapsed:.1f} s after the kill started; orphan alive: {alive}"
    )
    report = {
        "idle_used_bytes": idle, "with_orphan_used_bytes": held, "after_kill_used_bytes": after,
        "orphan_pid": pid, "orphan_parent_pid": ppid, "orphan_parent_comm": parent_comm,
        "classified": klass, "reason": reason, "procs_exit": procs.returncode, "kill_exit": kill.returncode,
        "released_to_idle": after <= idle + 64 * MIB, "orphan_alive_after": alive,
        "seconds_to_release": round(elapsed, 2),
    }  # fmt: skip
    (out / "procs_report.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    # A suspect here means the unit's proof no longer reaches a real CUDA worker: a failure.
    return 0 if klass == "leftover" and report["released_to_idle"] and not alive else 1


if __name__ == "__main__":
    raise SystemExit(main())
