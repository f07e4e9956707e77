"""The restart guard on a real NVIDIA GPU: a SIGKILLed fake API server's CUDA child.

    python tests/perf/h200_restart_guard.py [OUT_DIR]     (needs torch and a GPU)

1. starts a fake API server that listens on a free port and spawns a CUDA child
   named like vLLM's engine (`VLLM::EngineCore`) holding 4 GiB on GPU 0;
2. SIGKILLs the API server, as an OOM killer or a careless `kill -9` would: the
   port frees, the child is reparented and keeps its memory;
3. runs `servedeck service restart --yes` for a profile naming that port and a unit:
   the guard must refuse (exit 4) before systemctl runs, naming the child's PID and
   its GiB (NVML's figure). A stand-in `systemctl show` on PATH answers for the
   made-up unit, as in the tests: run by this user from OUT_DIR, where the fake API
   server ran, which proves the child the service's leftover (not a suspect);
4. ends the child with `servedeck kill PID --yes` (the K path: pidfd, identity, audit);
5. runs the restart again: the guard must pass (systemctl then fails on the made-up
   unit, which the stand-in refuses, not a refusal of the guard) and prints the figures.
   Exit 0 when all held.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.systemctl_standin import (  # noqa: E402
    unit_show_text,
    unit_user_field,
    write_systemctl,
)

HOLD_GIB = 4
UNIT = "servedeck-guard-probe.service"

API_SERVER = r"""
import socket, subprocess, sys
sock = socket.socket()
sock.bind(("127.0.0.1", int(sys.argv[1])))
sock.listen()
child = subprocess.Popen([sys.executable, "-c", sys.argv[2], sys.argv[3]], pass_fds=())
print(child.pid, flush=True)
child.wait()
"""
ENGINE = (
    "import sys, time, setproctitle, torch\n"
    "setproctitle.setproctitle('VLLM::EngineCore')\n"
    f"x = torch.empty({HOLD_GIB} << 30, dtype=torch.uint8, device='cuda')\n"
    "x.fill_(1); torch.cuda.synchronize()\n"
    "open(sys.argv[1], 'w').write('ready')\n"
    "time.sleep(1800)\n"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def servedeck(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def main() -> int:
    out = Path(
        sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="guard-h200-")
    ).resolve()
    out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    ready = out / "engine-ready"
    ready.unlink(missing_ok=True)
    profile = out / "guard-probe.toml"
    profile.write_text(
        f'[service]\nengine = "vllm"\nunit = "{UNIT}"\nbase_url = "http://127.0.0.1:{port}"\n'
    )
    vllm = str(Path(sys.executable).parent / "vllm")
    show = unit_show_text(UNIT, "inactive", unit_user_field(), str(out), (vllm, "serve"))
    os.environ["PATH"] = f"{write_systemctl(out, show)}{os.pathsep}{os.environ['PATH']}"
    api = subprocess.Popen(
        [sys.executable, "-c", API_SERVER, str(port), ENGINE, str(ready)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=out,
    )
    assert api.stdout is not None
    child = int(api.stdout.readline())
    ok = True
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ready.exists(), "the CUDA child did not allocate its memory in 120 s"
        os.kill(api.pid, signal.SIGKILL)
        api.wait(timeout=30)
        print(f"API server {api.pid} SIGKILLed; CUDA child {child} holds {HOLD_GIB} GiB")

        started = time.monotonic()
        first = servedeck("--profile", str(profile), "service", "restart", "--yes")
        guard_s = time.monotonic() - started
        print(f"guarded restart: exit {first.returncode} in {guard_s:.2f} s\n{first.stderr}")
        refused = first.returncode == 4 and f"pid {child} (" in first.stderr
        named_gib = f"pid {child} ({HOLD_GIB}." in first.stderr
        print(f"refused: {refused}; child's GiB named: {named_gib}")
        ok &= refused and named_gib

        kill = servedeck("--profile", str(profile), "kill", str(child), "--yes")
        print(f"kill (K path): exit {kill.returncode}\n{kill.stdout}{kill.stderr}")
        ok &= kill.returncode == 0 and not alive(child)

        second = servedeck("--profile", str(profile), "service", "restart", "--yes")
        print(f"restart after K: exit {second.returncode}\n{second.stdout}{second.stderr}")
        ok &= second.returncode != 4 and "refused" not in second.stderr
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)
        if api.poll() is None:
            api.kill()
    print("RESULT", "PASS" if ok else "FAIL")
    (out / "h200_restart_guard.txt").write_text("PASS\n" if ok else "FAIL\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
